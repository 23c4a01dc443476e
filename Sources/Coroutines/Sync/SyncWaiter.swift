/// One coroutine waiting in a ``SyncWaitQueue``: it lives in the waiting coroutine's own frame
/// (on the heap for a coroutine on a shared stack), and the queue holds a pointer to it, so a
/// wait allocates nothing and the queue retains nothing — as a channel's waiters do (see
/// `ReceiveWaiter`, whose queue it shares).
///
/// The waiter carries no resumer: it is claimed through its coroutine's wait word
/// (`Coroutine.claim`), where the first claim wins, exactly as with `CoroutineResumer`. A grant
/// pops it, claims it and sets `granted` under the queue's lock, and wakes it after dropping the
/// lock; a timer or `cancel()` claims it and sets nothing. So a permit, a lock or a signal
/// handed to a waiter that is leaving at that moment fails its claim and goes to the next
/// waiter instead: never lost, never given twice. A waiter that no grant reached takes itself
/// out of the queue, under the lock, before its storage goes.
@usableFromInline
struct SyncWaiter: QueuedWaiter {
  /// Unowned: a coroutine cannot finish while it has a waiter queued (see `ReceiveWaiter`).
  @usableFromInline let coroutine: Unmanaged<Coroutine>
  /// What the waiter asks for: a permit count (semaphores, locks) or 0 (conditions, groups).
  @usableFromInline let weight: Int
  /// The generation of the coroutine's armed wait that a grant may end.
  @usableFromInline var generation: UInt64 = 0
  /// Set by the claim that granted the wait, before the coroutine is woken.
  @usableFromInline var granted = false
  /// The timer of a wait with a timeout, retained by hand (`endWait` releases it), so that the
  /// waiter holds no reference and its end in the parked frame costs nothing.
  @usableFromInline var timer: Unmanaged<SyncTimeout>?
  @usableFromInline var links = WaiterLinks<Self>()

  @inlinable
  init(coroutine: borrowing Coroutine, weight: Int) {
    self.coroutine = .passUnretained(coroutine)
    self.weight = weight
  }
}

@usableFromInline typealias SyncWaiterPointer = UnsafeMutablePointer<SyncWaiter>

/// Granted waits to wake once the queue's lock is dropped: a waker may take its scheduler's
/// lock, and a woken coroutine may run at once on another thread. One grant (the usual case)
/// allocates nothing.
///
/// Collecting n grants costs O(n), so that a release waking many waiters (a writer releasing
/// every reader queued behind it, a broadcast) holds the queue's lock only for as long as it
/// takes to move them out: the array grows in place, by doubling, never copied per append.
@usableFromInline
struct SyncWakeList {
  private var first: ClaimedCoroutine?
  /// Optional rather than empty: releasing even an empty array was a call per hand-over.
  private var rest: [ClaimedCoroutine]?

  mutating func append(_ claimed: ClaimedCoroutine) {
    if first == nil {
      first = claimed
    } else if rest == nil {
      rest = [claimed]
    } else {
      // Mutated in place through the optional: the one reference, so no copy.
      rest!.append(claimed)
    }
  }

  /// Wakes every granted wait, in the order granted.
  consuming func wakeAll() {
    first?.wake()
    if let rest { for claimed in rest { claimed.wake() } }
  }

  /// Where the grants past the first are stored, for tests that count how often it moves.
  var storageAddressForTesting: UnsafeRawPointer? {
    rest?.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
  }
}
