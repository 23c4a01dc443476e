import Coroutines
import Dispatch
import Foundation

/// The lazy message queue: a producer on a background queue pages through an inbox and yields
/// messages one by one; the consumer on the main loop shows the first unread ones and stops,
/// and the producer stops with it.
public enum GeneratorWalkthrough {
  /// One message of the inbox.
  public struct Message: Codable, Sendable, Equatable {
    /// Its position in the inbox, from 1.
    public let id: Int
    /// The subject line.
    public let subject: String
    /// Whether the user has not read it yet.
    public let unread: Bool
  }

  /// How many messages to show and how the stub server behaves.
  public struct Configuration: Sendable {
    /// Unread messages the consumer shows before it stops.
    public var unreadToShow = 10
    /// Messages per page the server sends.
    public var pageSize = 8
    /// Latency of each page (pages do not fail by default).
    public var network = StubConditions(latency: 0.010...0.030, failureRate: 0)

    /// The defaults: show 10 unread messages, 8 per page, 10–30 ms a page.
    public init() {}
  }

  /// What happened.
  public struct Report: Sendable {
    /// The messages shown, in order.
    public let shown: [Message]
    /// Messages the producer yielded in all.
    public let yielded: Int
    /// Pages the producer fetched.
    public let pagesFetched: Int
    /// Whether the producer's `defer` ran: it unwound when the consumer stopped.
    public let producerUnwound: Bool
  }

  /// The entry for `swift run examples generator`.
  public static let walkthrough = Walkthrough(
    name: "generator",
    summary: "a lazy message queue: a background producer, the consumer shows 10 unread",
    stubs: "the network"
  ) { narrator in
    let report = try run(Configuration(), narrator: narrator)
    guard report.shown.count == 10, report.producerUnwound else {
      throw WalkthroughCheckFailed("expected 10 messages and a stopped producer")
    }
    narrator.show(
      "\n  The producer fetched \(report.pagesFetched) pages and yielded \(report.yielded) messages:"
        + " only as far as\n  the consumer asked. When the consumer stopped, the producer's"
        + " pending yield threw\n  CancellationError and its defer ran: nothing kept fetching"
        + " in the background.")
  }

  /// The inbox the stub server pages through: endless, about two messages in five unread.
  static func page(_ number: Int, size: Int) -> [Message] {
    (0..<size).map { offset in
      let id = number * size + offset + 1
      return Message(id: id, subject: "Message \(id)", unread: (id * 7919) % 5 < 2)
    }
  }

  /// Runs the consumer on a fresh loop on the calling thread and the producer on a background
  /// queue.
  public static func run(_ configuration: Configuration, narrator: Narrator) throws -> Report {
    let http = StubHTTPClient(conditions: configuration.network) { url in
      guard let number = Int(url.split(separator: "=").last ?? "") else { return nil }
      return try? JSONEncoder().encode(page(number, size: configuration.pageSize))
    }
    let yielded = Locked(0)
    let pages = Locked(0)
    let unwound = CoPromise<Bool>()
    let shown = try CoroutineLoop.run { () -> [Message] in
      let producer = DispatchQueue(label: "message-producer")
      let messages = co_sequence(on: producer) { (yield: CoYield<Message>) in
        defer {
          narrator.say("producer: stopped; its defer ran and its stack went back to the pool")
          unwound.fulfill(true)
        }
        for number in 0... {
          narrator.say("producer: fetching page \(number)")
          let url = "https://mail.example.org/inbox?page=\(number)"
          let data: Data = try co_await { http.get(url, completion: $0) }
          pages.withLock { $0 += 1 }
          for message in try JSONDecoder().decode([Message].self, from: data) {
            yielded.withLock { $0 += 1 }
            try yield(message)
          }
        }
      }
      var shown: [Message] = []
      for message in messages where message.unread {
        narrator.say("consumer: showing #\(message.id) \(message.subject) (unread)")
        shown.append(message)
        if shown.count == configuration.unreadToShow { break }
      }
      if let error = messages.error { throw error }  // the producer failed: say why
      narrator.say("consumer: shown \(shown.count) unread messages; cancelling the generator")
      messages.cancel()
      _ = try co_await(unwound)
      return shown
    }
    return Report(
      shown: shown, yielded: yielded.value, pagesFetched: pages.value,
      producerUnwound: unwound.result.flatMap { try? $0.get() } == true)
  }
}
