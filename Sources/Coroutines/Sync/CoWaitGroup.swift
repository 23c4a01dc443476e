/// Waits for a group of work to finish: ``add(_:)`` counts work in, ``done()`` counts it out,
/// and ``wait(timeout:)`` suspends the coroutine until the count is zero.
///
/// ```swift
/// let group = CoWaitGroup()
/// let finished = try CoroutineLoop.run { () -> Bool in
///   for delay in [0.03, 0.01, 0.02] {
///     group.add()
///     co_launch(on: DispatchQueue.global()) {
///       defer { group.done() }
///       try co_delay(delay)
///     }
///   }
///   try group.wait()  // all three are done
///   return true
/// }
/// ```
///
/// ``add(_:)`` and ``done()`` may be called from any thread. Every coroutine waiting when the
/// count reaches zero is woken; a group may be used again afterwards.
public final class CoWaitGroup: Sendable {
  private let queue = SyncWaitQueue(reason: .waitGroup)
  private let state = Counter()

  /// The count, under the queue's lock.
  private final class Counter: @unchecked Sendable {  // touched only under the queue's lock
    var count = 0
  }

  /// Creates a group with a count of zero.
  public init() {}

  /// Adds `count` to the count (a negative `count` takes away). A count that would drop below
  /// zero or pass `Int.max` stops the program with a message naming the call and the value.
  public func add(_ count: Int = 1) {
    change(by: count, isDone: false)
  }

  /// Counts one piece of work out. Called more often than ``add(_:)`` counted in, it stops the
  /// program with a message.
  public func done() {
    change(by: -1, isDone: true)
  }

  private func change(by delta: Int, isDone: Bool) {
    var wakeList = SyncWakeList()
    queue.lock.lock()
    let (sum, overflow) = state.count.addingReportingOverflow(delta)
    guard !overflow, sum >= 0 else {
      let now = state.count
      queue.lock.unlock()
      if isDone {
        coStop(
          "CoWaitGroup.done(): called with the count at \(now): more done() calls than add(_:) "
            + "counted")
      }
      coStop(
        "CoWaitGroup.add(_:): adding \(delta) to the count \(now) would make it "
          + (overflow ? "pass Int.max" : "negative"))
    }
    state.count = sum
    if sum == 0 { queue.grantAll(into: &wakeList) }
    queue.lock.unlock()
    wakeList.wakeAll()
  }

  /// Suspends the coroutine until the count is zero; returns at once if it is.
  ///
  /// - Parameter timeout: Seconds to wait at most, on the coroutine's scheduler's clock; nil
  ///   waits for as long as it takes.
  /// - Throws: ``CoroutineError/timedOut`` past `timeout`, `CancellationError` if the coroutine
  ///   is cancelled while it waits, ``CoroutineError/notInCoroutine`` outside a coroutine.
  public func wait(timeout: Double? = nil) throws {
    let coroutine = try Coroutine.requireCurrent()
    if coroutine.isCancelled { throw CancellationError() }
    try queue.park(coroutine, weight: 0, timeout: timeout, grantNow: { state.count == 0 }).get()
  }

  /// The count right now: a snapshot, already stale when it returns.
  public var count: Int { queue.lock.withLock { state.count } }
}
