import Coroutines
import Foundation

/// Channels: a fast producer and a slow consumer joined by a small buffer (back-pressure), then
/// `co_select` over two channels and a timeout.
public enum ChannelWalkthrough {
  /// Sizes and speeds.
  public struct Configuration: Sendable {
    /// Items the producer sends through the pipeline.
    public var items = 8
    /// The pipeline channel's buffer.
    public var capacity = 2
    /// Seconds the consumer spends on each item.
    public var consumerDelay = 0.010
    /// How long `co_select` waits for either channel before giving up.
    public var selectTimeout = 0.050

    /// The defaults: 8 items through a 2-slot buffer, 10 ms per item, a 50 ms timeout.
    public init() {}
  }

  /// What happened.
  public struct Report: Sendable {
    /// Items the consumer received, in order.
    public let received: [Int]
    /// The most items the producer was ever ahead of the consumer.
    public let largestLead: Int
    /// What the select loop saw, in order.
    public let selected: [String]
  }

  /// The entry for `swift run examples channel`.
  public static let walkthrough = Walkthrough(
    name: "channel",
    summary: "a pipeline with back-pressure, then co_select over two channels and a timeout"
  ) { narrator in
    let configuration = Configuration()
    let report = try run(configuration, narrator: narrator)
    guard report.received == Array(1...configuration.items), report.selected.last == "timeout"
    else {
      throw WalkthroughCheckFailed("the pipeline lost items or the select never timed out")
    }
    narrator.show(
      "\n  The producer was never more than \(report.largestLead) items ahead: send() suspended"
        + " it while the buffer\n  was full, with no thread blocked. co_select took whichever"
        + " channel had a value and gave\n  up after \(milliseconds(configuration.selectTimeout))"
        + " of silence.")
  }

  /// Runs both parts on a fresh loop on the calling thread.
  public static func run(_ configuration: Configuration, narrator: Narrator) throws -> Report {
    try CoroutineLoop.run {
      let (received, lead) = try pipeline(configuration, narrator)
      let selected = try select(configuration, narrator)
      return Report(received: received, largestLead: lead, selected: selected)
    }
  }

  private static func pipeline(
    _ configuration: Configuration, _ narrator: Narrator
  ) throws -> ([Int], Int) {
    narrator.say(
      "part 1: a producer, a channel with room for \(configuration.capacity), a slow consumer")
    let channel = CoChannel<Int>(capacity: configuration.capacity)
    // The producer reads how far the consumer has got: a count both coroutines share, so it is
    // a Sendable one (the compiler cannot see that both run on this loop).
    let done = Locked(0)
    let producer = co_launch { () -> Int in
      defer { channel.close() }
      var largestLead = 0
      for item in 1...configuration.items {
        try channel.send(item)  // suspends while the buffer is full
        largestLead = max(largestLead, item - done.value)
        narrator.say("producer: sent \(item) (\(channel.count) waiting in the buffer)")
      }
      return largestLead
    }
    var received: [Int] = []
    for item in channel {
      try co_delay(configuration.consumerDelay)
      received.append(item)
      done.withLock { $0 += 1 }
      narrator.say("consumer: done with \(item)")
    }
    return (received, try co_await(producer))
  }

  private static func select(
    _ configuration: Configuration, _ narrator: Narrator
  ) throws -> [String] {
    narrator.say(
      "part 2: co_select over news and alerts, with a"
        + " \(milliseconds(configuration.selectTimeout)) timeout")
    let news = CoChannel<String>(capacity: 4)
    let alerts = CoChannel<String>(capacity: 4)
    co_launch {
      defer { news.close() }
      for headline in ["coroutines ship", "loop stays free", "stacks pooled"] {
        try co_delay(0.008)
        try news.send(headline)
      }
    }
    co_launch {
      for alert in ["disk 91% full", "disk 95% full"] {
        try co_delay(0.013)
        try alerts.send(alert)
      }
      // alerts stays open and silent: only the timeout ends the select loop.
    }
    var selected: [String] = []
    var newsOpen = true
    while true {
      let event = try co_select { (select: CoSelect<String>) in
        if newsOpen {
          select.receive(from: news, onClosed: { "news closed" }) { "news: \($0)" }
        }
        select.receive(from: alerts) { "alert: \($0)" }
        select.timeout(configuration.selectTimeout) { "timeout" }
      }
      narrator.say("select: \(event)")
      selected.append(event)
      if event == "news closed" { newsOpen = false }
      if event == "timeout" { break }
    }
    alerts.close()
    return selected
  }

  private static func milliseconds(_ seconds: Double) -> String {
    "\(Int((seconds * 1000).rounded())) ms"
  }
}
