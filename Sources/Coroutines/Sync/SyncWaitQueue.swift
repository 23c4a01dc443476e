import CUContext

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
final class SyncWaitQueue: @unchecked Sendable {  // `waiters` and each user's state: under `lock`
  /// `cu_lock`, one word: a coroutine may move threads while the primitive is in use, and
  /// `Synchronization.Mutex` on Linux caches a thread's id in a way a moving coroutine upsets.
  let lock = ChannelLock()
  // Unchecked exclusivity: touched only under `lock`, by accesses that call nothing.
  @exclusivity(unchecked) private var waiters = WaiterQueue<SyncWaiter>()

  var isEmpty: Bool { waiters.isEmpty }

  /// The weight the first waiter asks for, if any waits.
  var firstWeight: Int? { waiters.head?.pointee.weight }

  /// Takes the first waiter out and claims its wait for a grant; nil if the queue is empty.
  /// `.some(nil)`: the first waiter was leaving (a timer or a cancellation ended its wait) and
  /// takes nothing. Under the lock.
  func grantFirstWaiter() -> ClaimedWait?? {
    guard let waiter = waiters.popFirst() else { return nil }
    let coroutine = waiter.pointee.coroutine
    guard let claimed = claimWait(coroutine, waiter.pointee.generation) else { return .some(nil) }
    waiter.pointee.granted = true
    return claimed
  }

  /// Takes waiters from the front until one accepts a grant; the waiters skipped were leaving.
  /// Under the lock.
  func grantFirst(into wakeList: inout SyncWakeList) {
    while let outcome = grantFirstWaiter() {
      if let claimed = outcome {
        wakeList.append(claimed)
        return
      }
    }
  }

  /// Grants every waiter still waiting. Under the lock.
  func grantAll(into wakeList: inout SyncWakeList) {
    while let outcome = grantFirstWaiter() {
      if let claimed = outcome { wakeList.append(claimed) }
    }
  }

  /// Parks `coroutine` (the one running this call) until a grant, its timeout or its
  /// cancellation, unless `grantNow` says under the lock that it may go on at once.
  ///
  /// - Parameters:
  ///   - weight: What the waiter asks for (see ``SyncWaiter``).
  ///   - timeout: Seconds on the coroutine's scheduler's clock; nil waits for ever.
  ///   - cancellable: False for a wait that must end with its grant (a condition relocking its
  ///     mutex): a cancellation that lands meanwhile is left for the coroutine's next suspension.
  ///   - grantNow: Under the lock: true if the caller may go on without queueing.
  ///   - enqueued: After the waiter is queued, before it parks (a condition unlocks its mutex).
  ///   - afterLeaving: Under the lock, after a waiter left the queue without its grant.
  ///
  /// Inlined, down to the switch, into the one out-of-line frame of each primitive's waiting
  /// path: every frame that spans a switch returns mispredicted afterwards (see "Switching" in
  /// Coroutine.swift), which with this call's own frames cost more than the rest of a hand-over.
  @inline(__always)
  func park(
    _ coroutine: Coroutine, weight: Int, timeout: Double?, cancellable: Bool = true,
    grantNow: () -> Bool, enqueued: () -> Void = {},
    afterLeaving: (inout SyncWakeList) -> Void = { _ in }
  ) -> SyncWaitOutcome {
    if coroutine.usesSharedStack {
      // Nothing may point into a shared stack's frames while the coroutine is parked.
      let onHeap = SyncWaiterPointer.allocate(capacity: 1)
      onHeap.initialize(to: SyncWaiter(coroutine: coroutine, weight: weight))
      defer { onHeap.deinitialize(count: 1).deallocate() }
      return park(
        onHeap, coroutine, timeout: timeout, cancellable: cancellable, grantNow: grantNow,
        enqueued: enqueued, afterLeaving: afterLeaving)
    }
    var waiter = SyncWaiter(coroutine: coroutine, weight: weight)
    return withUnsafeMutablePointer(to: &waiter) {
      park(
        $0, coroutine, timeout: timeout, cancellable: cancellable, grantNow: grantNow,
        enqueued: enqueued, afterLeaving: afterLeaving)
    }
  }

  @inline(__always)
  private func park(
    _ waiter: SyncWaiterPointer, _ coroutine: Coroutine, timeout: Double?, cancellable: Bool,
    grantNow: () -> Bool, enqueued: () -> Void, afterLeaving: (inout SyncWakeList) -> Void
  ) -> SyncWaitOutcome {
    lock.lock()
    if grantNow() {
      lock.unlock()
      return .granted
    }
    // Armed under the lock, so that no grant can see the waiter before it can be claimed.
    waiter.pointee.generation = coroutine.armWait()
    waiters.append(waiter)
    lock.unlock()
    enqueued()
    let timer = timeout.map { startTimer($0, for: coroutine, generation: waiter.pointee.generation) }
    if cancellable { coroutine.endWaitIfCancelled(waiter.pointee.generation) }
    while true {
      if let fiber = coroutine.fiberToPark() { cu_fiber_suspend(fiber) }
      if waiter.pointee.granted || cancellable || timer != nil { break }
      // An uncancellable wait ended by `cancel()`, which claims one wait only: wait again.
      lock.lock()
      if !waiter.pointee.links.isQueued {
        // A grant already passed it over; ask again, or queue anew.
        if grantNow() {
          lock.unlock()
          return .granted
        }
        waiters.append(waiter)
      }
      waiter.pointee.generation = coroutine.armWait()
      lock.unlock()
    }
    timer?.timer.cancel()
    if waiter.pointee.granted { return .granted }
    var wakeList = SyncWakeList()
    lock.lock()
    if waiter.pointee.links.isQueued {
      waiters.remove(waiter)
      afterLeaving(&wakeList)
    }
    lock.unlock()
    wakeList.wakeAll()
    // Not granted: ended by the timer, or by a cancellation, which wins if both came.
    return coroutine.isCancelled ? .cancelled : .timedOut
  }
}

/// A wait's timeout timer, boxed: an optional existential in the waiting path cost calls to
/// destroy it even when no timeout was asked for.
final class SyncTimeout {
  let timer: any CoroutineTimer
  init(_ timer: any CoroutineTimer) { self.timer = timer }
}

/// Ends the wait of `generation` after `seconds` on the coroutine's scheduler's clock, unless
/// something else ends it first.
@inline(never)
func startTimer(_ seconds: Double, for coroutine: Coroutine, generation: UInt64) -> SyncTimeout {
  SyncTimeout(
    coroutine.scheduler.schedule(after: seconds) {
      if coroutine.claim(generation) { coroutine.wake() }
    })
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
