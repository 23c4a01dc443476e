import Foundation

/// Counts the ticks of a coroutine on the main loop. Other threads may read the count or wait
/// for it to grow: a background stage can prove the loop was free while it worked.
public final class Ticker: @unchecked Sendable {  // reason: `count` is guarded by `condition`
  private let condition = NSCondition()
  private var count = 0

  /// Creates a ticker at zero.
  public init() {}

  /// Ticks so far.
  public var ticks: Int {
    condition.lock()
    defer { condition.unlock() }
    return count
  }

  /// Adds one tick and wakes whoever waits for it; returns the new count.
  @discardableResult
  public func tick() -> Int {
    condition.lock()
    defer { condition.unlock() }
    count += 1
    condition.broadcast()
    return count
  }

  /// Blocks the calling (background) thread until the count reaches `target`; returns false if
  /// `timeout` seconds pass first. Never call it on the loop that ticks.
  public func wait(untilTicks target: Int, timeout: Double) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    condition.lock()
    defer { condition.unlock() }
    while count < target {
      if !condition.wait(until: deadline) { return count >= target }
    }
    return true
  }
}
