/// A coroutine waiting on a channel: a receiver, or a sender holding its value.
///
/// A waiter carries no lock and no resumer of its own: it is claimed through its coroutine's
/// wait word (`Coroutine.claim`), which already makes "the first claim wins" exclusive across
/// every party that may end the wait — the channel operation that completes it, another case
/// of the same `co_select`, the select's timeout, the coroutine's cancellation. The winner
/// writes `outcome` under the channel's lock right after its claim, and wakes the coroutine
/// only after dropping its locks, so the coroutine reads `outcome` once it runs again.
///
/// A waiter whose wait another party won (a losing select case, a cancelled coroutine) may
/// linger in its queue until its owner removes it: every operation skips it, because its
/// claim fails — even after the coroutine has armed later waits, whose generations differ.
@usableFromInline
final class ReceiveWaiter<T>: @unchecked Sendable {  // `outcome`: written once by the claim winner
  @usableFromInline
  enum Outcome {
    case value(T)
    case closed
  }

  @usableFromInline let coroutine: Coroutine
  @usableFromInline let generation: UInt64
  // Unchecked: written once, by the claim winner under the channel's lock, and read by the
  // coroutine only after that winner woke it.
  @usableFromInline @exclusivity(unchecked) var outcome: Outcome?

  @inlinable
  init(coroutine: Coroutine, generation: UInt64) {
    self.coroutine = coroutine
    self.generation = generation
  }

  /// Wins the wait, or returns nil when another party already ended it. On success the caller
  /// writes `outcome` before dropping the channel's lock, then wakes the returned wait.
  @inlinable
  func claim() -> ClaimedWait? {
    coroutine.claim(generation) ? ClaimedWait(coroutine: coroutine) : nil
  }
}

/// A sender waiting on a full channel with its value; see ``ReceiveWaiter``.
@usableFromInline
final class SendWaiter<T>: @unchecked Sendable {  // `outcome`: written once by the claim winner
  @usableFromInline
  enum Outcome {
    case delivered
    case closed
  }

  @usableFromInline let coroutine: Coroutine
  @usableFromInline let generation: UInt64
  @usableFromInline let value: T
  // Unchecked: written once, by the claim winner under the channel's lock, and read by the
  // coroutine only after that winner woke it.
  @usableFromInline @exclusivity(unchecked) var outcome: Outcome?

  @inlinable
  init(coroutine: Coroutine, generation: UInt64, value: T) {
    self.coroutine = coroutine
    self.generation = generation
    self.value = value
  }

  /// Wins the wait, or returns nil when another party already ended it; see
  /// ``ReceiveWaiter/claim()``.
  @inlinable
  func claim() -> ClaimedWait? {
    coroutine.claim(generation) ? ClaimedWait(coroutine: coroutine) : nil
  }
}

/// A won wait whose coroutine must be woken once the winner has dropped its locks (waking may
/// take the coroutine's scheduler's lock, and the coroutine may run at once on another thread).
@usableFromInline
struct ClaimedWait {
  @usableFromInline let coroutine: Coroutine

  @inlinable
  init(coroutine: Coroutine) {
    self.coroutine = coroutine
  }

  /// Wakes the waiting coroutine (if it has not parked yet, its `park()` returns at once).
  @inlinable
  func wake() { coroutine.wake() }
}
