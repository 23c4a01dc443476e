import Foundation

/// A feed the user subscribed to: what the screen lists before anything is fetched.
public struct Subscription: Sendable, Equatable {
  /// The name shown while fetching.
  public let title: String
  /// Where the feed is served.
  public let url: String

  /// A subscription to `url`, shown as `title`.
  public init(title: String, url: String) {
    self.title = title
    self.url = url
  }
}

/// What the database keeps for one feed after a refresh, fetched or not.
public struct FeedRecord: Sendable, Equatable {
  /// The feed's address; the database's key.
  public let url: String
  /// The feed's own title, or the subscription's when the fetch failed.
  public let title: String
  /// The feed's icon: from the feed, or the one the database remembered when the fetch failed.
  public let iconURL: String?
  /// How many items the feed had; zero when the fetch failed.
  public let itemCount: Int
  /// Why the fetch failed; nil when it worked.
  public let failure: String?

  /// A record for a fetched feed.
  public init(url: String, title: String, iconURL: String?, itemCount: Int) {
    self.url = url
    self.title = title
    self.iconURL = iconURL
    self.itemCount = itemCount
    self.failure = nil
  }

  /// A record for a feed whose fetch failed: it is saved anyway, without items, so the screen
  /// still lists it, with the icon remembered from an earlier refresh.
  public init(failed subscription: Subscription, error: any Error, icon: String?) {
    url = subscription.url
    title = subscription.title
    iconURL = icon
    itemCount = 0
    failure = String(describing: error)
  }
}

/// A record as saved: the id the database handed out, and what it holds.
public struct SavedFeed: Sendable, Equatable {
  /// The database's id for the feed.
  public let id: Int
  /// What was saved.
  public let record: FeedRecord

  /// Pairs `record` with its `id`.
  public init(id: Int, record: FeedRecord) {
    self.id = id
    self.record = record
  }
}

/// Turns a feed document into a record.
public enum FeedParser {
  private struct Document: Codable {
    struct Item: Codable { let title: String }
    let title: String
    let icon: String?
    let items: [Item]
  }

  /// Parses a JSON feed document fetched for `subscription`.
  public static func parse(_ data: Data, for subscription: Subscription) throws -> FeedRecord {
    let document = try JSONDecoder().decode(Document.self, from: data)
    return FeedRecord(
      url: subscription.url, title: document.title, iconURL: document.icon,
      itemCount: document.items.count)
  }

  /// The document a server would send for a feed with these contents.
  static func document(title: String, icon: String, items: [String]) -> Data {
    let document = Document(title: title, icon: icon, items: items.map(Document.Item.init))
    return (try? JSONEncoder().encode(document)) ?? Data()
  }
}

/// The stub server behind the feed walkthrough: a fixed list of feeds and their documents.
public enum FeedServer {
  private static let names = [
    "Swift Weekly", "Linux Kernel News", "Compiler Notes", "The Morning Paper", "Systems Digest",
    "Hacker Letters", "Type Theory Today", "Embedded Rust", "Distributed Thoughts",
    "Database Internals", "Garbage Collected", "Lock-free Living", "The Scheduler",
    "Stack Overflowed", "Memory Ordering", "Async Afternoons", "Kernel Panic", "Green Threads",
    "Context Switch", "Fiber Optics",
  ]

  /// The first `count` subscriptions (names repeat with a number past twenty).
  public static func subscriptions(count: Int) -> [Subscription] {
    (0..<count).map { index in
      let base = names[index % names.count]
      let title = index < names.count ? base : "\(base) \(index / names.count + 1)"
      return Subscription(title: title, url: "https://feeds.example.org/\(slug(title)).json")
    }
  }

  /// The icon each feed had on the last refresh, as a database would remember it.
  public static func rememberedIcons(for subscriptions: [Subscription]) -> [String: String] {
    Dictionary(uniqueKeysWithValues: subscriptions.map { ($0.url, icon(for: $0.url)) })
  }

  /// What the server sends for `url`: a feed document, or nil (404) for an unknown address.
  @Sendable public static func route(_ url: String) -> Data? {
    let prefix = "https://feeds.example.org/"
    guard url.hasPrefix(prefix), url.hasSuffix(".json") else { return nil }
    let slug = url.dropFirst(prefix.count).dropLast(".json".count)
    let title = names.first { self.slug($0) == slug } ?? String(slug)
    let count = 3 + slug.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xffff } % 9
    let items = (1...count).map { "\(title) #\($0)" }
    return FeedParser.document(title: title, icon: icon(for: url), items: items)
  }

  private static func icon(for url: String) -> String {
    url.replacingOccurrences(of: ".json", with: "/icon.png")
  }

  private static func slug(_ title: String) -> String {
    title.lowercased().split(separator: " ").joined(separator: "-")
  }
}
