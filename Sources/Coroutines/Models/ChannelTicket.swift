import Synchronization

/// One coroutine's wait on one or more channel operations: the first claim wins.
///
/// A plain `send` or `receive` that must wait leaves one waiter holding a ticket; a
/// `co_select` leaves one waiter per case, all holding the same ticket. A channel that wants to
/// complete a waiter claims its ticket, under the channel's lock: the first claim wins, and
/// any later one (another case of the same select, a timeout, the coroutine's cancellation)
/// loses, so exactly one operation completes. The winner's result is written inside the claim,
/// so whoever later reads the ticket also sees that result.
@usableFromInline
final class ChannelTicket: @unchecked Sendable {  // all state is behind `state`'s mutex
  /// The index a timeout claims with.
  static let timeout = -1
  /// The index the waiting coroutine claims with when it gives up (it was cancelled).
  @usableFromInline static let abandoned = -2

  private enum State {
    /// Nobody has won yet; the resumer is there once the coroutine has suspended.
    case pending(CoroutineResumer<Void>?)
    /// Case `index` won.
    case won(Int)
  }

  private let state = Mutex<State>(.pending(nil))

  @usableFromInline init() {}

  /// Tries to win the ticket for case `index`; on success runs `deliver` (still inside the
  /// claim) and returns the resumer to wake, which the caller resumes after dropping its
  /// locks. Returns nil when someone else already won.
  @usableFromInline
  func claim(_ index: Int, deliver: () -> Void = {}) -> ClaimedWait? {
    state.withLock { state -> ClaimedWait? in
      guard case .pending(let resumer) = state else { return nil }
      state = .won(index)
      deliver()
      return ClaimedWait(resumer: resumer)
    }
  }

  /// Hands the suspended coroutine's resumer to the ticket; resumes it at once if a claim
  /// came first.
  func arm(_ resumer: CoroutineResumer<Void>) {
    let alreadyWon = state.withLock { state -> Bool in
      guard case .pending = state else { return true }
      state = .pending(resumer)
      return false
    }
    if alreadyWon { resumer.resume(.success(())) }
  }

  /// Ends the wait after the coroutine woke (or was never suspended): returns the index that
  /// won, claiming ``abandoned`` if nobody did.
  func settle() -> Int {
    let (index, dropped) = state.withLock { state -> (Int, CoroutineResumer<Void>?) in
      switch state {
      case .won(let index): return (index, nil)
      case .pending(let resumer):
        state = .won(Self.abandoned)
        return (Self.abandoned, resumer)
      }
    }
    _ = dropped  // released outside the lock: its wait has already ended, so this is a no-op
    return index
  }
}

/// A won wait whose coroutine must be woken once the winner has dropped its locks.
@usableFromInline
struct ClaimedWait {
  fileprivate let resumer: CoroutineResumer<Void>?

  /// Wakes the waiting coroutine (nothing to do if it had not suspended yet: `arm` sees the win).
  @usableFromInline
  func wake() { resumer?.resume(.success(())) }
}

/// A receiver waiting on a channel. `outcome` is written once, inside the winning claim.
@usableFromInline
final class ReceiveWaiter<T>: @unchecked Sendable {  // `outcome` is written inside a ticket claim
  @usableFromInline
  enum Outcome {
    case value(T)
    case closed
  }

  @usableFromInline let ticket: ChannelTicket
  @usableFromInline let index: Int
  // Unchecked: written once inside the winning claim (under the ticket's mutex), read by the
  // waiter only after it has seen the win.
  @usableFromInline @exclusivity(unchecked) var outcome: Outcome?

  @usableFromInline
  init(ticket: ChannelTicket, index: Int) {
    self.ticket = ticket
    self.index = index
  }
}

/// A sender waiting on a full channel with its value. `outcome` is written once, inside the
/// winning claim.
@usableFromInline
final class SendWaiter<T>: @unchecked Sendable {  // `outcome` is written inside a ticket claim
  @usableFromInline
  enum Outcome {
    case delivered
    case closed
  }

  @usableFromInline let ticket: ChannelTicket
  @usableFromInline let index: Int
  @usableFromInline let value: T
  // Unchecked: written once inside the winning claim (under the ticket's mutex), read by the
  // waiter only after it has seen the win.
  @usableFromInline @exclusivity(unchecked) var outcome: Outcome?

  @usableFromInline
  init(ticket: ChannelTicket, index: Int, value: T) {
    self.ticket = ticket
    self.index = index
    self.value = value
  }
}
