/// A counting semaphore for coroutines: at most `value` permits are out at once, and waiting
/// for one suspends the coroutine, never the thread.
///
/// ```swift
/// let downloads = CoSemaphore(value: 2)  // two at a time
/// let pages = try CoroutineLoop.run { () -> [Int] in
///   let tasks = (1...5).map { page in
///     co_launch { () -> Int in
///       try downloads.withPermit {
///         try co_delay(0.01)  // the download
///         return page
///       }
///     }
///   }
///   return try tasks.map { try co_await($0) }
/// }
/// // pages == [1, 2, 3, 4, 5]
/// ```
///
/// Waiters are served first come, first served: ``signal()`` hands its permit straight to the
/// longest waiter. A waiter that times out or is cancelled leaves the queue and takes nothing
/// with it: a permit handed to it at that moment goes to the next waiter. Uncontended, a wait
/// and a signal are one compare-and-swap each.
public final class CoSemaphore: Sendable {
  private let permits: SyncPermits

  /// Creates a semaphore with `value` free permits. A negative value stops the program with a
  /// message naming it.
  public init(value: Int) {
    coPrecondition(value >= 0, "CoSemaphore(value:): the value \(value) is negative")
    permits = SyncPermits(value, reason: .semaphore)
  }

  /// Takes a permit, suspending the coroutine until one is free.
  ///
  /// - Parameter timeout: Seconds to wait at most, on the coroutine's scheduler's clock; nil
  ///   waits for as long as it takes.
  /// - Throws: ``CoroutineError/timedOut`` past `timeout`, `CancellationError` if the coroutine
  ///   is cancelled while it waits (in both cases no permit is taken);
  ///   ``CoroutineError/notInCoroutine`` outside a coroutine.
  public func wait(timeout: Double? = nil) throws {
    let running = try Coroutine.requireCurrentUnretained()
    if permits.tryAcquire(1) { return }
    try running._withUnsafeGuaranteedRef {
      try permits.acquireWaiting(1, by: $0, timeout: timeout)
    }
  }

  /// Takes a permit if one is free and nobody waits for it, without suspending; from any
  /// thread.
  ///
  /// - Returns: True if a permit was taken.
  public func tryWait() -> Bool { permits.tryAcquire(1) }

  /// Returns a permit: to the longest waiter if there is one, else to the pool. From any
  /// thread. A count that would pass `Int.max` stops the program with a message.
  public func signal() {
    permits.release(1, in: "CoSemaphore.signal()")
  }

  /// Runs `body` holding a permit, and returns it afterwards, also when `body` throws.
  ///
  /// - Throws: What ``wait(timeout:)`` throws, and what `body` throws.
  public func withPermit<R>(_ body: () throws -> R) throws -> R {
    try wait()
    defer { signal() }
    return try body()
  }

  /// The permits free right now: a snapshot, already stale when it returns.
  public var available: Int { permits.available }
}
