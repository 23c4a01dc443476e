import Dispatch

/// The feed screen's database, in memory: it hands out an id per feed address and remembers
/// each feed's icon, on its own serial queue, calling back when a write is done, the way an
/// SQLite queue would.
public final class StubFeedDatabase: Sendable {
  private struct State {
    var nextID = 1
    var rows: [String: SavedFeed] = [:]
    var icons: [String: String]
  }

  private let state: Locked<State>
  private let queue = DispatchQueue(label: "feed-database")
  private let conditions: StubConditions
  private let narrator: Narrator?

  /// A database that already remembers `rememberedIcons` (feed address → icon address), whose
  /// writes take `conditions`' latency; each save is narrated when `narrator` is given.
  public init(
    rememberedIcons: [String: String] = [:],
    conditions: StubConditions = StubConditions(latency: 0.0005...0.002, failureRate: 0),
    narrator: Narrator? = nil
  ) {
    state = Locked(State(icons: rememberedIcons))
    self.conditions = conditions
    self.narrator = narrator
  }

  /// The icon remembered for the feed at `url`, from this or an earlier refresh.
  public func rememberedIcon(for url: String) -> String? {
    state.withLock { $0.icons[url] }
  }

  /// Saves `record` and calls `completion` with its id, on the database's queue. A feed saved
  /// again keeps its id.
  public func save(_ record: FeedRecord, completion: @escaping @Sendable (Int) -> Void) {
    let latency = conditions.outcome(for: "save \(record.url)").latency
    queue.asyncAfter(deadline: .now() + latency) { [state, narrator] in
      let id = state.withLock { state in
        let id = state.rows[record.url]?.id ?? state.nextID
        if id == state.nextID { state.nextID += 1 }
        state.rows[record.url] = SavedFeed(id: id, record: record)
        if let icon = record.iconURL { state.icons[record.url] = icon }
        return id
      }
      let outcome = record.failure == nil ? "\(record.itemCount) items" : "no items: fetch failed"
      narrator?.say("database: saved #\(id) \(record.title) (\(outcome))")
      completion(id)
    }
  }

  /// Every saved feed, by id.
  public var savedFeeds: [SavedFeed] {
    state.withLock { $0.rows.values.sorted { $0.id < $1.id } }
  }
}
