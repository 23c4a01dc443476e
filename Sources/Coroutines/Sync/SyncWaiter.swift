/// One coroutine waiting in a ``SyncWaitQueue``: its place in the queue and how its wait ended.
///
/// The waiter is the queue entry and the resumer at once: whoever claims the coroutine's armed
/// wait (`Coroutine.claim`) ends it, exactly as with `CoroutineResumer`, the first claim winning.
/// A grant claims it under the queue's lock and records `granted`; a timer claims it and records
/// `timedOut`; `cancel()` claims it and records nothing. So a permit, a lock or a signal handed to
/// a waiter that is leaving at that moment fails its claim and goes to the next waiter instead:
/// never lost, never given twice.
final class SyncWaiter: @unchecked Sendable {  // fields: under the queue's lock, or claim-ordered
  let coroutine: Coroutine
  /// What the waiter asks for: a permit count (semaphores, locks) or 0 (conditions, groups).
  let weight: Int
  /// The generation of the coroutine's armed wait that this entry may end.
  var generation: UInt64 = 0
  /// Set by the claim that granted the wait, before the coroutine is woken.
  var granted = false
  /// Set by the claim of the timeout timer, before the coroutine is woken.
  var timedOut = false
  /// True while the waiter is linked into its queue.
  var isQueued = false
  /// The queue's links; `next` also chains granted waiters on their way to being woken.
  var next: SyncWaiter?
  /// Unowned: the queue holds each waiter through its predecessor's `next` (or its head).
  unowned(unsafe) var previous: SyncWaiter?

  init(coroutine: Coroutine, weight: Int) {
    self.coroutine = coroutine
    self.weight = weight
  }

  /// Ends the wait with a grant if it has not ended yet; under the queue's lock. False when a
  /// timer or a cancellation ended it first: the waiter is leaving and takes nothing.
  func claimGrant() -> Bool {
    guard coroutine.claim(generation) else { return false }
    granted = true
    return true
  }
}

/// Granted waiters to wake once the queue's lock is dropped, chained through `next`.
struct SyncWakeList {
  private var head: SyncWaiter?
  private var tail: SyncWaiter?

  var isEmpty: Bool { head == nil }

  mutating func append(_ waiter: SyncWaiter) {
    waiter.next = nil
    if let tail { tail.next = waiter } else { head = waiter }
    tail = waiter
  }

  /// Wakes every waiter in order; called after the lock is dropped, so a woken coroutine that
  /// runs at once on another thread never finds it held.
  consuming func wakeAll() {
    var current = head
    head = nil
    tail = nil
    while let waiter = current {
      current = waiter.next
      waiter.next = nil
      waiter.coroutine.wake()
    }
  }
}
