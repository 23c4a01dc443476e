/// A condition variable for coroutines: a coroutine holding a ``CoMutex`` waits until another
/// signals that the state it guards has changed.
///
/// ```swift
/// final class WorkQueue: @unchecked Sendable {  // `items` only under `mutex`
///   let mutex = CoMutex()
///   let nonEmpty = CoCondition()
///   var items: [Int] = []
/// }
///
/// let queue = WorkQueue()
/// let taken = try CoroutineLoop.run { () -> Int in
///   let consumer = co_launch { () -> Int in
///     try queue.mutex.withLock {
///       while queue.items.isEmpty { try queue.nonEmpty.wait(queue.mutex) }
///       return queue.items.removeFirst()
///     }
///   }
///   try queue.mutex.withLock { queue.items.append(42) }
///   queue.nonEmpty.signal()
///   return try co_await(consumer)
/// }
/// // taken == 42
/// ```
///
/// ``wait(_:timeout:)`` unlocks the mutex, suspends the coroutine, and locks the mutex again
/// before it returns or throws, so a `withLock` around it always unlocks what it locked. Waiters
/// are woken in the order they came. As with any condition variable, wait in a loop that checks
/// the state: a signal says only that it may have changed.
public final class CoCondition: Sendable {
  private let queue = SyncWaitQueue(reason: .condition)

  /// Creates a condition with no waiters.
  public init() {}

  /// Unlocks `mutex`, suspends the coroutine until a ``signal()`` or ``broadcast()`` wakes it,
  /// then locks `mutex` again.
  ///
  /// The mutex is locked again however the wait ends: after a timeout and after a cancellation
  /// too (it is relocked first, and then the error is thrown).
  ///
  /// - Parameters:
  ///   - mutex: The mutex guarding the state; the coroutine must hold it.
  ///   - timeout: Seconds to wait for a signal at most, on the coroutine's scheduler's clock;
  ///     nil waits for as long as it takes.
  /// - Throws: ``CoroutineError/timedOut`` past `timeout`; `CancellationError` if the coroutine
  ///   is cancelled (at once, without unlocking the mutex, if it already was);
  ///   ``CoroutineError/mutexNotHeld`` if the coroutine does not hold `mutex`;
  ///   ``CoroutineError/notInCoroutine`` outside a coroutine.
  public func wait(_ mutex: CoMutex, timeout: Double? = nil) throws {
    let coroutine = try Coroutine.requireCurrent()
    guard mutex.isHeld(by: coroutine) else { throw CoroutineError.mutexNotHeld }
    if coroutine.isCancelled { throw CancellationError() }
    // Queued before the mutex is unlocked: a signal sent by whoever locks it next finds it.
    let outcome = queue.park(
      coroutine, weight: 0, timeout: timeout, grantNow: { false },
      enqueued: { mutex.unlockForConditionWait() })
    mutex.lockIgnoringCancellation(by: coroutine)
    try outcome.get()
  }

  /// Wakes the longest waiter, if any. From any thread, with or without the mutex.
  public func signal() {
    var wakeList = SyncWakeList()
    queue.lock.withLock { queue.grantFirst(into: &wakeList) }
    wakeList.wakeAll()
  }

  /// Wakes every waiter. From any thread, with or without the mutex.
  public func broadcast() {
    var wakeList = SyncWakeList()
    queue.lock.withLock { queue.grantAll(into: &wakeList) }
    wakeList.wakeAll()
  }
}
