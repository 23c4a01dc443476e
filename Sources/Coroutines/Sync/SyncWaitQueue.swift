import CUContext

/// How one wait in a ``SyncWaitQueue`` ended.
@usableFromInline
enum SyncWaitOutcome {
  case granted, timedOut, cancelled

  /// Returns for a grant; throws ``CoroutineError/timedOut`` or `CancellationError` otherwise.
  @inlinable
  func get() throws {
    switch self {
    case .granted: return
    case .timedOut: throw CoroutineError.timedOut
    case .cancelled: throw CancellationError()
    }
  }
}

/// The waiter queue shared by every coroutine lock: a lock, a first-in, first-out list of
/// parked coroutines, and the one way to park in it with a timeout and cancellation.
///
/// Each primitive keeps its own state under ``lock`` and tells ``park`` two things: whether the
/// caller may go on at once (`grantNow`, asked under the lock before the caller queues), and
/// what to do when a waiter leaves the queue without its grant (`afterLeaving`, under the lock,
/// for a queue whose next waiter may now be served). Waiters are woken only after the lock is
/// dropped.
@usableFromInline
final class SyncWaitQueue: @unchecked Sendable {  // `waiters` and each user's state: under `lock`
  /// `cu_lock`, one word: a coroutine may move threads while the primitive is in use, and
  /// `Synchronization.Mutex` on Linux caches a thread's id in a way a moving coroutine upsets.
  @usableFromInline let lock = ShortLock()
  // Unchecked exclusivity: touched only under `lock`, by accesses that call nothing.
  @exclusivity(unchecked) private var waiters = WaiterQueue<SyncWaiter>()

  /// What a coroutine waiting here waits for, as dumps name it.
  let reason: CoroutineWaitReason

  /// A queue whose waiters a dump shows as waiting for `reason`; waiters of all the permits
  /// (`Int.max`, a write lock's weight) as waiting for a write lock.
  @usableFromInline init(reason: CoroutineWaitReason) { self.reason = reason }

  var isEmpty: Bool { waiters.isEmpty }

  /// The weight the first waiter asks for, if any waits.
  var firstWeight: Int? { waiters.head?.pointee.weight }

  /// Takes the first waiter out and claims its wait for a grant; nil if the queue is empty.
  /// `.some(nil)`: the first waiter was leaving (a timer or a cancellation ended its wait) and
  /// takes nothing. Under the lock.
  func grantFirstWaiter() -> ClaimedCoroutine?? {
    guard let waiter = waiters.popFirst() else { return nil }
    let coroutine = waiter.pointee.coroutine
    guard let claimed = ClaimedCoroutine.claim(coroutine, generation: waiter.pointee.generation)
    else {
      return .some(nil)
    }
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
  /// Inlined, with the waiter in the caller's frame, and the switch made from that frame: the
  /// bookkeeping happens in calls that return before the switch or start after it, because
  /// every frame that spans a switch returns mispredicted afterwards (see "Switching" in
  /// Coroutine+Switch.swift), which cost a hand-over about a tenth of its time.
  @inlinable @inline(__always)
  func park(
    _ coroutine: Coroutine, weight: Int, timeout: Double?, cancellable: Bool = true,
    grantNow: () -> Bool, enqueued: () -> Void = {},
    afterLeaving: (inout SyncWakeList) -> Void = { _ in }
  ) -> SyncWaitOutcome {
    if coroutine.usesSharedStack {
      return parkOnHeap(
        coroutine, weight: weight, timeout: timeout, cancellable: cancellable, grantNow: grantNow,
        enqueued: enqueued, afterLeaving: afterLeaving)
    }
    var waiter = SyncWaiter(coroutine: coroutine, weight: weight)
    return withUnsafeMutablePointer(to: &waiter) { waiter in
      guard
        beginWait(
          waiter, coroutine, timeout: timeout, cancellable: cancellable, grantNow: grantNow,
          enqueued: enqueued)
      else { return .granted }
      repeat {
        if let fiber = coroutine.fiberToPark() { cu_fiber_suspend(fiber) }
      } while !waitIsOver(waiter, coroutine, cancellable: cancellable, grantNow: grantNow)
      return endWait(waiter, coroutine, afterLeaving: afterLeaving)
    }
  }

  /// ``park`` for a coroutine on a shared stack: nothing may point into a shared stack's frames
  /// while the coroutine is parked, so the waiter waits on the heap.
  @usableFromInline @inline(never)
  func parkOnHeap(
    _ coroutine: Coroutine, weight: Int, timeout: Double?, cancellable: Bool,
    grantNow: () -> Bool, enqueued: () -> Void, afterLeaving: (inout SyncWakeList) -> Void
  ) -> SyncWaitOutcome {
    let waiter = SyncWaiterPointer.allocate(capacity: 1)
    waiter.initialize(to: SyncWaiter(coroutine: coroutine, weight: weight))
    defer { waiter.deinitialize(count: 1).deallocate() }
    guard
      beginWait(
        waiter, coroutine, timeout: timeout, cancellable: cancellable, grantNow: grantNow,
        enqueued: enqueued)
    else { return .granted }
    repeat {
      coroutine.park()
    } while !waitIsOver(waiter, coroutine, cancellable: cancellable, grantNow: grantNow)
    return endWait(waiter, coroutine, afterLeaving: afterLeaving)
  }

  /// Before the switch: queues `waiter` with a wait armed, unless `grantNow` lets it go on (then
  /// returns false), and starts its timer.
  @usableFromInline
  func beginWait(
    _ waiter: SyncWaiterPointer, _ coroutine: Coroutine, timeout: Double?, cancellable: Bool,
    grantNow: () -> Bool, enqueued: () -> Void
  ) -> Bool {
    lock.lock()
    if grantNow() {
      lock.unlock()
      return false
    }
    // Armed under the lock, so that no grant can see the waiter before it can be claimed.
    waiter.pointee.generation = coroutine.armWait(
      waiter.pointee.weight == Int.max ? .writeLock : reason)
    waiters.append(waiter)
    lock.unlock()
    enqueued()
    if let timeout {
      waiter.pointee.timer = .passRetained(
        startTimer(timeout, for: coroutine, generation: waiter.pointee.generation))
    }
    if cancellable { coroutine.endWaitIfCancelled(waiter.pointee.generation) }
    return true
  }

  /// After a switch back: true once the wait is over (granted, or ended by its timer or a
  /// cancellation). False for an uncancellable wait ended by `cancel()` (which claims one wait
  /// only), queued and armed again here: park again.
  @usableFromInline
  func waitIsOver(
    _ waiter: SyncWaiterPointer, _ coroutine: Coroutine, cancellable: Bool,
    grantNow: () -> Bool
  ) -> Bool {
    if waiter.pointee.granted || cancellable || waiter.pointee.timer != nil { return true }
    lock.lock()
    if !waiter.pointee.links.isQueued {
      // A grant already passed it over; ask again, or queue anew.
      if grantNow() {
        lock.unlock()
        waiter.pointee.granted = true
        return true
      }
      waiters.append(waiter)
    }
    waiter.pointee.generation = coroutine.armWait(
      waiter.pointee.weight == Int.max ? .writeLock : reason)
    lock.unlock()
    return false
  }

  /// After the wait is over: stops its timer, takes the waiter out of the queue if no grant did
  /// (serving the next waiters if `afterLeaving` says so), and says how the wait ended.
  @usableFromInline
  func endWait(
    _ waiter: SyncWaiterPointer, _ coroutine: Coroutine,
    afterLeaving: (inout SyncWakeList) -> Void
  ) -> SyncWaitOutcome {
    if let timer = waiter.pointee.timer {
      timer._withUnsafeGuaranteedRef { $0.timer.cancel() }
      timer.release()
    }
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
@usableFromInline
final class SyncTimeout {
  let timer: any CoroutineTimer
  init(_ timer: any CoroutineTimer) { self.timer = timer }
}

/// Ends the wait of `generation` after `seconds` on the coroutine's scheduler's clock, unless
/// something else ends it first.
func startTimer(_ seconds: Double, for coroutine: Coroutine, generation: UInt64) -> SyncTimeout {
  SyncTimeout(
    coroutine.scheduler.schedule(after: seconds) {
      if coroutine.claim(generation) { coroutine.wake() }
    })
}
