/// How one wait in a ``SyncWaitQueue`` ended.
enum SyncWaitOutcome {
  case granted, timedOut, cancelled
}

/// The waiter queue shared by every coroutine lock: a lock, a first-in, first-out list of
/// parked coroutines, and the one way to park in it with a timeout and cancellation.
///
/// Each primitive keeps its own state under ``lock`` and tells ``park`` two things: whether the
/// caller may go on at once (`grantNow`, asked under the lock before the caller queues), and
/// what to do when a waiter leaves the queue without its grant (`afterLeaving`, under the lock,
/// for a queue whose next waiter may now be served). Waiters are woken only after the lock is
/// dropped.
final class SyncWaitQueue: @unchecked Sendable {  // the list and each user's state: under `lock`
  /// `cu_lock`, one word: a coroutine may move threads while the primitive is in use, and
  /// `Synchronization.Mutex` on Linux caches a thread's id in a way a moving coroutine upsets.
  let lock = ChannelLock()
  private var head: SyncWaiter?
  private unowned(unsafe) var tail: SyncWaiter?

  var isEmpty: Bool { head == nil }
  var first: SyncWaiter? { head }

  func append(_ waiter: SyncWaiter) {
    waiter.isQueued = true
    waiter.next = nil
    waiter.previous = tail
    if let tail { tail.next = waiter } else { head = waiter }
    tail = waiter
  }

  func remove(_ waiter: SyncWaiter) {
    guard waiter.isQueued else { return }
    waiter.isQueued = false
    let next = waiter.next
    if let previous = waiter.previous { previous.next = next } else { head = next }
    if let next { next.previous = waiter.previous } else { tail = waiter.previous }
    waiter.next = nil
    waiter.previous = nil
  }

  @discardableResult
  func removeFirst() -> SyncWaiter? {
    guard let waiter = head else { return nil }
    remove(waiter)
    return waiter
  }

  /// Takes waiters from the front until one accepts a grant; the waiters skipped were leaving.
  /// Under the lock.
  func grantFirst(into wakeList: inout SyncWakeList) -> Bool {
    while let waiter = removeFirst() {
      if waiter.claimGrant() {
        wakeList.append(waiter)
        return true
      }
    }
    return false
  }

  /// Grants every waiter still waiting. Under the lock.
  func grantAll(into wakeList: inout SyncWakeList) {
    while let waiter = removeFirst() {
      if waiter.claimGrant() { wakeList.append(waiter) }
    }
  }

  /// Parks `waiter`'s coroutine (the one running this call) until a grant, its timeout or its
  /// cancellation, unless `grantNow` says under the lock that it may go on at once.
  ///
  /// - Parameters:
  ///   - timeout: Seconds on the coroutine's scheduler's clock; nil waits for ever.
  ///   - cancellable: False for a wait that must end with its grant (a condition relocking its
  ///     mutex): a cancellation that lands meanwhile is left for the coroutine's next suspension.
  ///   - grantNow: Under the lock: true if the caller may go on without queueing.
  ///   - enqueued: After the waiter is queued, before it parks (a condition unlocks its mutex).
  ///   - afterLeaving: Under the lock, after a waiter left the queue without its grant.
  func park(
    _ waiter: SyncWaiter, timeout: Double?, cancellable: Bool = true,
    grantNow: () -> Bool, enqueued: () -> Void = {},
    afterLeaving: (inout SyncWakeList) -> Void = { _ in }
  ) -> SyncWaitOutcome {
    let coroutine = waiter.coroutine
    lock.lock()
    if grantNow() {
      lock.unlock()
      return .granted
    }
    // Armed under the lock, so that no grant can look at the waiter before it can be claimed.
    waiter.generation = coroutine.armWait()
    append(waiter)
    lock.unlock()
    enqueued()
    var timer: (any CoroutineTimer)?
    if let timeout {
      timer = coroutine.scheduler.schedule(after: timeout) { [generation = waiter.generation] in
        guard coroutine.claim(generation) else { return }
        waiter.timedOut = true
        coroutine.wake()
      }
    }
    if cancellable { coroutine.endWaitIfCancelled(waiter.generation) }
    while true {
      coroutine.park()
      if waiter.granted { break }
      if cancellable || waiter.timedOut { break }
      // An uncancellable wait ended by `cancel()`, which claims one wait only: wait again.
      lock.lock()
      if !waiter.isQueued {
        // A grant already passed it over; ask again, or queue anew.
        if grantNow() {
          lock.unlock()
          return .granted
        }
        append(waiter)
      }
      waiter.generation = coroutine.armWait()
      lock.unlock()
    }
    timer?.cancel()
    if waiter.granted { return .granted }
    var wakeList = SyncWakeList()
    lock.lock()
    if waiter.isQueued {
      remove(waiter)
      afterLeaving(&wakeList)
    }
    lock.unlock()
    wakeList.wakeAll()
    return waiter.timedOut ? .timedOut : .cancelled
  }
}

extension SyncWaitOutcome {
  /// Returns for a grant; throws ``CoroutineError/timedOut`` or `CancellationError` otherwise.
  func get() throws {
    switch self {
    case .granted: return
    case .timedOut: throw CoroutineError.timedOut
    case .cancelled: throw CancellationError()
    }
  }
}
