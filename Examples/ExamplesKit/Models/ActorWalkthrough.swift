import Coroutines
import Dispatch
import Foundation

/// A cache actor shared by many coroutines: one message at a time, so a key is fetched from
/// the origin once however many coroutines ask for it at once, and the cache needs no lock.
public enum ActorWalkthrough {
  /// How many coroutines ask, for how many keys, and how slow the origin is.
  public struct Configuration: Sendable {
    /// Coroutines sending requests at the same time.
    public var clients = 8
    /// Requests each coroutine sends, one after the other.
    public var requestsPerClient = 5
    /// Distinct keys they ask for.
    public var keys = 4
    /// Latency of the origin server behind the cache (no failures by default).
    public var origin = StubConditions(latency: 0.010...0.030, failureRate: 0)

    /// The defaults: 8 coroutines × 5 requests over 4 keys.
    public init() {}
  }

  /// What happened.
  public struct Report: Sendable {
    /// Requests answered correctly.
    public let answered: Int
    /// Requests that got a wrong value.
    public let wrong: Int
    /// Requests that reached the origin server: one per key.
    public let originFetches: Int
    /// Whether a message sent after `stop()` was rejected with `actorStopped`.
    public let rejectedAfterStop: Bool
  }

  /// The entry for `swift run examples actor`.
  public static let walkthrough = Walkthrough(
    name: "actor",
    summary: "a cache actor serving many coroutines, one message at a time; replies awaited",
    stubs: "the network"
  ) { narrator in
    let configuration = Configuration()
    let report = try run(configuration, narrator: narrator)
    guard report.wrong == 0, report.rejectedAfterStop else {
      throw WalkthroughCheckFailed("the cache answered wrongly or accepted a late message")
    }
    narrator.show(
      "\n  \(report.answered) requests from \(configuration.clients) coroutines,"
        + " \(report.originFetches) trips to the origin: the actor handled one message\n  at a"
        + " time, so its dictionary needed no lock and no key was fetched twice. A message\n"
        + "  sent after stop() was rejected, not dropped.")
  }

  /// Runs the clients on a fresh loop on the calling thread and the actor on its own queue.
  public static func run(_ configuration: Configuration, narrator: Narrator) throws -> Report {
    let origin = StubHTTPClient(conditions: configuration.origin) { url in
      Data("contents of \(url)".utf8)
    }
    let cache = co_actor(on: DispatchQueue(label: "cache-actor")) {
      (mailbox: CoMailbox<String, String>) in
      var entries: [String: String] = [:]
      for message in mailbox {
        let key = message.value
        if let hit = entries[key] {
          message.reply(hit)
          continue
        }
        narrator.say("cache: miss for \(key); fetching it from the origin")
        let data: Data = try co_await { origin.get(key, completion: $0) }
        let value = String(decoding: data, as: UTF8.self)
        entries[key] = value
        message.reply(value)
      }
    }
    let tally = Locked((answered: 0, wrong: 0))
    try CoroutineLoop.run {
      let clients = (0..<configuration.clients).map { client in
        co_launch { () -> Void in
          for request in 0..<configuration.requestsPerClient {
            let key = "key-\((client + request) % configuration.keys)"
            let value = try co_await(cache.send(key))
            let right = value == "contents of \(key)"
            tally.withLock { right ? ($0.answered += 1) : ($0.wrong += 1) }
          }
          narrator.say("client \(client): all \(configuration.requestsPerClient) replies in")
        }
      }
      for client in clients { try co_await(client) }
    }
    cache.stop()
    let late = try CoroutineLoop.run { () -> Bool in
      do {
        _ = try co_await(cache.send("key-0"))
        return false
      } catch CoroutineError.actorStopped {
        narrator.say("a message sent after stop() was rejected with actorStopped")
        return true
      } catch {
        return false
      }
    }
    return Report(
      answered: tally.value.answered, wrong: tally.value.wrong,
      originFetches: origin.requestCount, rejectedAfterStop: late)
  }
}
