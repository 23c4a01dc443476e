/// A coroutine waiting on a channel to receive: it lives in the waiting coroutine's own frame
/// (on the heap for a shared-stack coroutine, or for a `co_select` case), and the channel's
/// queue holds a pointer to it, so a wait allocates nothing and the queue retains nothing.
///
/// A waiter carries no lock and no resumer: it is claimed through its coroutine's wait word
/// (`Coroutine.claim`), which already makes "the first claim wins" exclusive across every
/// party that may end the wait — the channel operation that completes it, another case of the
/// same `co_select`, the select's timeout, the coroutine's cancellation. The winner pops the
/// waiter, claims it and writes `outcome` under the channel's lock, and wakes the coroutine
/// only after dropping its locks; the coroutine reads `outcome` once it runs again.
///
/// Lifetime: a waiter's pointer stays in a queue only while its storage is alive. Whoever
/// completes a waiter has popped it first; a waiter that no operation completed (its
/// coroutine was cancelled, or another case of its select won) is removed by its owner, under
/// the channel's lock, before the storage goes. Until then operations that pop it skip it,
/// because its claim fails — even once the coroutine has armed later waits, whose generations
/// differ. So the unowned `coroutine` is alive whenever a lock holder reads it: the coroutine
/// cannot finish while it still has a waiter queued.
///
/// A waiter may also belong to a future or a callback instead of a coroutine (see
/// ``ChannelRequest``): it then lives in that request, and is claimed through it.
@usableFromInline
struct ReceiveWaiter<T>: QueuedWaiter {
  @usableFromInline
  enum Outcome {
    case value(T)
    case closed
    case cancelled
  }

  @usableFromInline let owner: WaitOwner
  /// Written once, by the claim winner under the channel's lock; read by the coroutine only
  /// after that winner woke it.
  @usableFromInline var outcome: Outcome?
  @usableFromInline var links = WaiterLinks<Self>()

  // `borrowing`: an owned argument cost a retain and a release per wait.
  @inlinable
  init(coroutine: borrowing Coroutine, generation: UInt64) {
    owner = .coroutine(.passUnretained(coroutine), generation: generation)
  }

  /// The waiter of a future's or a callback's receive, which holds it.
  init(request: Unmanaged<ChannelRequest>) {
    owner = .request(request)
  }
}

/// A sender waiting on a full channel with its value; see ``ReceiveWaiter``.
@usableFromInline
struct SendWaiter<T>: QueuedWaiter {
  @usableFromInline
  enum Outcome {
    case delivered
    case closed
    case cancelled
  }

  @usableFromInline let owner: WaitOwner
  @usableFromInline let value: T
  /// Written once, by the claim winner under the channel's lock; read by the coroutine only
  /// after that winner woke it.
  @usableFromInline var outcome: Outcome?
  @usableFromInline var links = WaiterLinks<Self>()

  @inlinable
  init(coroutine: borrowing Coroutine, generation: UInt64, value: T) {
    owner = .coroutine(.passUnretained(coroutine), generation: generation)
    self.value = value
  }

  /// The waiter of a future's send, which holds it.
  init(request: Unmanaged<ChannelRequest>, value: T) {
    owner = .request(request)
    self.value = value
  }
}

/// Whose wait a channel's waiter is: a parked coroutine's armed wait, or a request made by a
/// future or a callback (see ``ChannelRequest``).
@usableFromInline
enum WaitOwner {
  case coroutine(Unmanaged<Coroutine>, generation: UInt64)
  /// Retained by the channel's queue while the waiter is queued.
  case request(Unmanaged<ChannelRequest>)

  /// Wins the wait for whoever popped the waiter (under the channel's lock), or returns nil
  /// when another party already ended it.
  @inlinable
  func claim() -> ClaimedWait? {
    switch self {
    case .coroutine(let coroutine, let generation): return claimWait(coroutine, generation)
    case .request(let request): return ChannelRequest.claimPopped(request)
    }
  }
}

/// Where a queued waiter lives (see ``ReceiveWaiter`` for why a pointer is safe).
@usableFromInline typealias ReceiveWaiterPointer<T> = UnsafeMutablePointer<ReceiveWaiter<T>>
/// Where a queued waiter lives (see ``ReceiveWaiter`` for why a pointer is safe).
@usableFromInline typealias SendWaiterPointer<T> = UnsafeMutablePointer<SendWaiter<T>>

/// Wins the wait of `coroutine`'s `generation`, or returns nil when another party already
/// ended it. On success the caller writes the waiter's outcome before dropping the channel's
/// lock, then wakes the returned wait.
@inlinable
func claimWait(_ coroutine: Unmanaged<Coroutine>, _ generation: UInt64) -> ClaimedWait? {
  coroutine._withUnsafeGuaranteedRef { $0.claim(generation) } ? .coroutine(coroutine) : nil
}

/// A won wait whose coroutine must be woken once the winner has dropped its locks (waking may
/// take the coroutine's scheduler's lock, and the coroutine may run at once on another thread),
/// or a won channel request to complete then (completing it settles a future or schedules a
/// callback: never under a lock).
///
/// A coroutine is unowned, which spares two retains and releases per hand-over: until `wake()`
/// changes its state, the claimed coroutine cannot run, so its own frame (which holds it) keeps
/// it alive; and `Coroutine.wake` no longer touches the coroutine once its state change lets it
/// run, except to queue it, which happens before it can run. A request carries the retain its
/// queue held, released by `wake()`.
@usableFromInline
enum ClaimedWait {
  case coroutine(Unmanaged<Coroutine>)
  case request(Unmanaged<ChannelRequest>)

  @inlinable
  init(_ coroutine: Unmanaged<Coroutine>) {
    self = .coroutine(coroutine)
  }

  /// Wakes the waiting coroutine (if it has not parked yet, its `park()` returns at once), or
  /// completes the request.
  @inlinable
  func wake() {
    switch self {
    case .coroutine(let coroutine): coroutine._withUnsafeGuaranteedRef { $0.wake() }
    case .request(let request): ChannelRequest.completeClaimed(request)
    }
  }
}
