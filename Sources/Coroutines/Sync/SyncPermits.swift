import Synchronization

/// A counting semaphore with weighted, first-come-first-served waiters: the core of
/// ``CoSemaphore``, ``CoMutex`` (one permit) and ``CoRWLock`` (a reader takes one permit of
/// `Int.max`, a writer all of them).
///
/// While nobody waits, `state` is the number of free permits, and taking or returning permits
/// is one compare-and-swap with no lock and no allocation. Once a coroutine must wait, `state`
/// becomes ``contended`` and the count moves into `parkedPermits`, under the queue's lock, until
/// the queue is empty and a permit is free again: from then on every caller goes through the
/// lock, so a newcomer cannot overtake a waiter, and a writer queued behind readers is not
/// starved by later ones. Returned permits go straight to the waiters at the front (a
/// hand-over), never back into the pool for a newcomer to snatch.
///
/// With the queue empty but no permit free (the last waiter was just served), `state` stays
/// ``contended``: in a steady hand-over between coroutines the next waiter then queues without
/// a compare-and-swap of its own, and the first release that finds nobody waiting publishes the
/// count again. So while `state` is ``contended``, either a waiter is queued or no permit is free.
///
/// `@usableFromInline`, with the paths to the switch `@inlinable`, so that `CoMutex.lock()` and
/// `unlock()` run in the caller's frame and a waiting coroutine switches out from it (see
/// `SyncWaitQueue.park`).
@usableFromInline
final class SyncPermits: @unchecked Sendable {  // `state` is atomic; the rest is under the lock
  /// `state` while waiters may be queued.
  @inlinable static var contended: Int { Int.min }

  @usableFromInline let state: Atomic<Int>
  @usableFromInline let queue: SyncWaitQueue
  /// The free permits while `state` is ``contended``.
  @exclusivity(unchecked) private var parkedPermits = 0  // under the lock; calls nothing

  @usableFromInline
  init(_ permits: Int, reason: CoroutineWaitReason) {
    state = Atomic(permits)
    queue = SyncWaitQueue(reason: reason)
  }

  /// Takes `weight` permits if they are free and nobody waits for them.
  @inlinable @inline(__always)
  func tryAcquire(_ weight: Int) -> Bool {
    var current = state.load(ordering: .relaxed)
    while current >= weight {
      let (exchanged, now) = state.compareExchange(
        expected: current, desired: current &- weight, ordering: .acquiring)
      if exchanged { return true }
      current = now
    }
    return false
  }

  /// Takes `weight` permits after ``tryAcquire(_:)`` failed: parks the running coroutine behind
  /// earlier waiters, unless the permits were freed meanwhile. `coroutine` is the running one;
  /// callers pass it from inside `_withUnsafeGuaranteedRef`, so that no retain is added.
  ///
  /// - Throws: ``CoroutineError/timedOut`` past `timeout`; `CancellationError` if the coroutine
  ///   is cancelled before or while it waits, or after the permits were handed to it but before
  ///   it ran again. Either way no permit is taken.
  @inlinable @inline(__always)
  func acquireWaiting(_ weight: Int, by coroutine: Coroutine, timeout: Double?) throws {
    if coroutine.isCancelled { throw CancellationError() }
    try queue.park(
      coroutine, weight: weight, timeout: timeout,
      grantNow: { takeOrQueueUnderLock(weight) },
      afterLeaving: { grantWaitersUnderLock(into: &$0) }
    ).get()
    if coroutine.isCancelled { try handBackCancelled(weight) }
  }

  /// The permits granted to a waiter that was cancelled before it could run again go to the
  /// next waiter (or back to the pool), and the wait throws: a cancelled wait takes nothing,
  /// whichever came first, the grant or the cancellation (as kotlinx.coroutines' prompt
  /// cancellation). Out of line: the wait's common path only tests the flag.
  @usableFromInline @inline(never)
  func handBackCancelled(_ weight: Int) throws(CancellationError) {
    release(weight, in: "a cancelled wait")
    throw CancellationError()
  }

  /// Takes `weight` permits, waiting through any cancellation (a condition relocking its mutex).
  @inline(never)
  func acquireIgnoringCancellation(_ weight: Int, by coroutine: Coroutine) {
    if tryAcquire(weight) { return }
    _ = queue.park(
      coroutine, weight: weight, timeout: nil, cancellable: false,
      grantNow: { takeOrQueueUnderLock(weight) },
      afterLeaving: { grantWaitersUnderLock(into: &$0) })
  }

  /// Under the lock: takes `weight` free permits if nobody waits, or else leaves `state`
  /// ``contended`` for the caller to queue. Already ``contended``, no permit can be taken: a
  /// waiter is queued first, or none is free.
  @usableFromInline
  func takeOrQueueUnderLock(_ weight: Int) -> Bool {
    var current = state.load(ordering: .relaxed)
    while current != Self.contended {
      let desired = current >= weight ? current &- weight : Self.contended
      let (exchanged, now) = state.compareExchange(
        expected: current, desired: desired, ordering: .acquiring)
      if exchanged {
        if desired != Self.contended { return true }
        parkedPermits = current
        return false
      }
      current = now
    }
    return false
  }

  /// Returns `weight` permits, handing them to the waiters at the front first. `call` names the
  /// public call for the message if the count would pass `Int.max`.
  @inlinable @inline(__always)
  func release(_ weight: Int, in call: StaticString) {
    var current = state.load(ordering: .relaxed)
    while current != Self.contended {
      coPrecondition(
        current <= Int.max - weight,
        "\(call): \(current) permits plus \(weight) would pass Int.max (\(Int.max))")
      let (exchanged, now) = state.compareExchange(
        expected: current, desired: current &+ weight, ordering: .releasing)
      if exchanged { return }
      current = now
    }
    releaseToWaiters(weight, in: call)
  }

  @usableFromInline @inline(never)
  func releaseToWaiters(_ weight: Int, in call: StaticString) {
    var wakeList = SyncWakeList()
    queue.lock.lock()
    if state.load(ordering: .relaxed) != Self.contended {
      // The queue emptied meanwhile: return the permits the plain way.
      queue.lock.unlock()
      return release(weight, in: call)
    }
    let parked = parkedPermits
    guard parked <= Int.max - weight else {
      queue.lock.unlock()
      coStop("\(call): \(parked) permits plus \(weight) would pass Int.max (\(Int.max))")
    }
    parkedPermits = parked + weight
    grantWaitersUnderLock(into: &wakeList)
    queue.lock.unlock()
    wakeList.wakeAll()
  }

  /// Under the lock, with `state` ``contended``: serves the waiters at the front while the
  /// permits cover them, skipping those that are leaving; publishes the count again once nobody
  /// waits.
  @usableFromInline
  func grantWaitersUnderLock(into wakeList: inout SyncWakeList) {
    guard state.load(ordering: .relaxed) == Self.contended else { return }
    while let weight = queue.firstWeight, weight <= parkedPermits {
      if let claimed = queue.grantFirstWaiter()! {
        parkedPermits -= weight
        wakeList.append(claimed)
      }
    }
    if queue.isEmpty, parkedPermits > 0 { state.store(parkedPermits, ordering: .releasing) }
  }

  /// The free permits now (a snapshot, for tests and diagnostics).
  var available: Int {
    let current = state.load(ordering: .acquiring)
    if current != Self.contended { return current }
    return queue.lock.withLock {
      let now = state.load(ordering: .relaxed)
      return now == Self.contended ? parkedPermits : now
    }
  }
}
