/// The rules of a channel, as a value: every method decides under the storage's lock and
/// returns what must happen next (which waiting coroutines to wake); the storage wakes them
/// after unlocking.
///
/// Invariants, counting only waiters whose wait is still unclaimed:
/// - receivers wait only while the buffer is empty, and senders only while it is full;
/// - once closed, nobody waits and nothing is added to the buffer.
///
/// A waiter is a parked coroutine's, or a future's or a callback's (a ``ChannelRequest``): the
/// state machine treats both alike, claiming them through their ``WaitOwner``.
///
/// Waiters whose wait another party has already won (the losing cases of a `co_select`, or a
/// coroutine that was cancelled) may linger in the queues until their owner removes them; every
/// operation skips them, because their claim fails (see ``ReceiveWaiter``).
@usableFromInline
struct ChannelStateMachine<T>: ~Copyable {
  @usableFromInline let capacity: Int
  /// A full buffer drops its oldest value for a new one instead of refusing it (a conflated
  /// channel: capacity 1, keeping the latest value).
  @usableFromInline let dropsOldest: Bool
  @usableFromInline var buffer = Ring<T>()
  @usableFromInline var senders = WaiterQueue<SendWaiter<T>>()
  @usableFromInline var receivers = WaiterQueue<ReceiveWaiter<T>>()
  @usableFromInline var isClosed = false
  /// Cancelled: closed, with the buffer dropped; every operation fails with cancellation.
  @usableFromInline var isCancelled = false

  @usableFromInline
  init(capacity: Int, dropsOldest: Bool = false) {
    self.capacity = capacity
    self.dropsOldest = dropsOldest
  }

  @usableFromInline
  enum SendDecision {
    /// The value was taken: by a waiting receiver (wake it) or into the buffer.
    case sent(ClaimedWait?)
    /// The channel is closed; the value was not taken.
    case closed
    /// The channel was cancelled; the value was not taken.
    case cancelled
    /// The buffer is full and no receiver waits.
    case full
  }

  @usableFromInline
  enum ReceiveDecision {
    /// A value: from the buffer (and a waiting sender refilled it: wake it) or straight from a
    /// waiting sender (wake it).
    case value(T, ClaimedWait?)
    /// The channel is closed and drained.
    case closed
    /// The channel was cancelled.
    case cancelled
    /// Nothing to receive yet.
    case empty
  }

  /// Offers `value` without waiting.
  @inlinable
  mutating func send(_ value: T) -> SendDecision {
    if isClosed { return isCancelled ? .cancelled : .closed }
    while let receiver = receivers.popFirst() {
      if let claimed = receiver.pointee.owner.claim() {
        receiver.pointee.outcome = .value(value)
        return .sent(claimed)
      }
    }
    guard buffer.count < capacity else {
      guard dropsOldest else { return .full }
      // No sender waits on a channel that never fills: the buffer only replaces its value.
      _ = buffer.popFirst()
      buffer.append(value)
      return .sent(nil)
    }
    buffer.append(value)
    return .sent(nil)
  }

  /// Takes a value without waiting.
  @inlinable
  mutating func receive() -> ReceiveDecision {
    // `isEmpty` first: inlined, it spares a rendezvous channel a call that finds nothing.
    if !buffer.isEmpty, let value = buffer.popFirst() {
      return .value(value, refillFromSender())
    }
    while let sender = senders.popFirst() {
      if let claimed = sender.pointee.owner.claim() {
        sender.pointee.outcome = .delivered
        return .value(sender.pointee.value, claimed)
      }
    }
    guard isClosed else { return .empty }
    return isCancelled ? .cancelled : .closed
  }

  /// Moves the first live waiting sender's value into the room a receive just made.
  @inlinable
  mutating func refillFromSender() -> ClaimedWait? {
    while let sender = senders.popFirst() {
      if let claimed = sender.pointee.owner.claim() {
        sender.pointee.outcome = .delivered
        buffer.append(sender.pointee.value)
        return claimed
      }
    }
    return nil
  }

  /// Queues a sender that found the channel full (only after `send` returned `.full` under the
  /// same lock).
  @inlinable
  mutating func enqueue(_ sender: SendWaiterPointer<T>) {
    senders.append(sender)
  }

  /// Queues a receiver that found the channel empty (only after `receive` returned `.empty`
  /// under the same lock).
  @inlinable
  mutating func enqueue(_ receiver: ReceiveWaiterPointer<T>) {
    receivers.append(receiver)
  }

  /// Forgets a waiter whose coroutine stopped waiting; a no-op if an operation already took it.
  mutating func remove(_ sender: SendWaiterPointer<T>) {
    senders.remove(sender)
  }

  /// Forgets a waiter whose coroutine stopped waiting; a no-op if an operation already took it.
  mutating func remove(_ receiver: ReceiveWaiterPointer<T>) {
    receivers.remove(receiver)
  }

  /// Takes a request's waiter out of its queue (its future was cancelled); true if it was
  /// queued, and the queue's retain of the request is now the caller's to release.
  mutating func withdraw(_ sender: SendWaiterPointer<T>) -> Bool {
    guard sender.pointee.links.isQueued else { return false }
    senders.remove(sender)
    return true
  }

  /// Takes a request's waiter out of its queue (its future was cancelled); true if it was
  /// queued, and the queue's retain of the request is now the caller's to release.
  mutating func withdraw(_ receiver: ReceiveWaiterPointer<T>) -> Bool {
    guard receiver.pointee.links.isQueued else { return false }
    receivers.remove(receiver)
    return true
  }

  /// Empties the queues of a channel that goes away, settling the requests still waiting in
  /// them (see ``ChannelRequest/abandon()``). Only requests can wait there: a coroutine waits
  /// inside a call on the channel, which keeps it alive.
  mutating func abandonRequests() {
    for receiver in receivers.removeAll() { Self.abandon(receiver.pointee.owner) }
    for sender in senders.removeAll() { Self.abandon(sender.pointee.owner) }
  }

  private static func abandon(_ owner: WaitOwner) {
    guard case .request(let request) = owner else { return }
    let won = request._withUnsafeGuaranteedRef { $0.claim() }
    if won { request._withUnsafeGuaranteedRef { $0.abandon() } }
    request.release()  // the queue's retain
  }

  /// Closes the channel: the buffer stays for receivers, and every waiter is told it is closed.
  /// Returns the waiters to wake.
  mutating func close() -> [ClaimedWait] {
    guard !isClosed else { return [] }
    isClosed = true
    return endWaits(receivers: .closed, senders: .closed)
  }

  /// Cancels the channel: drops the buffer into `dropped` (an empty ring), closes the channel
  /// (if it was not), and tells every waiter it was cancelled. Returns the waiters to wake; the
  /// caller releases the dropped values outside the lock.
  mutating func cancel(droppingInto dropped: inout Ring<T>) -> [ClaimedWait] {
    guard !isCancelled else { return [] }
    isClosed = true
    isCancelled = true
    swap(&buffer, &dropped)
    return endWaits(receivers: .cancelled, senders: .cancelled)
  }

  /// Ends every wait with the given outcomes; returns the waiters to wake.
  private mutating func endWaits(
    receivers receiverOutcome: ReceiveWaiter<T>.Outcome,
    senders senderOutcome: SendWaiter<T>.Outcome
  ) -> [ClaimedWait] {
    var woken: [ClaimedWait] = []
    for receiver in receivers.removeAll() {
      if let claimed = receiver.pointee.owner.claim() {
        receiver.pointee.outcome = receiverOutcome
        woken.append(claimed)
      }
    }
    for sender in senders.removeAll() {
      if let claimed = sender.pointee.owner.claim() {
        sender.pointee.outcome = senderOutcome
        woken.append(claimed)
      }
    }
    return woken
  }
}
