/// A channel's state behind its lock. Decisions are the state machine's; this type takes the
/// lock, performs what the state machine decided once the lock is dropped (waking
/// coroutines), and suspends the calling coroutine when it must wait.
@usableFromInline
final class ChannelStorage<T>: @unchecked Sendable {  // `state` is only touched under `lock`
  @usableFromInline let lock = ChannelLock()
  // Unchecked: only touched under `lock`, and no access spans a suspension (the state machine
  // decides, then the lock is dropped before anyone waits or is woken).
  @usableFromInline @exclusivity(unchecked) var state: ChannelStateMachine<T>

  init(capacity: Int) {
    state = ChannelStateMachine(capacity: capacity)
  }

  var capacity: Int { state.capacity }

  // MARK: Operations that may wait

  @inlinable
  func send(_ value: T) throws {
    let coroutine = try Coroutine.requireCurrent()
    if coroutine.isCancelled { throw CancellationError() }
    lock.lock()
    let waiter: SendWaiter<T>
    switch state.send(value) {
    case .sent(let claimed):
      lock.unlock()
      claimed?.wake()
      return
    case .closed:
      lock.unlock()
      throw CoroutineError.channelClosed
    case .full:
      waiter = SendWaiter(ticket: ChannelTicket(), index: 0, value: value)
      state.enqueue(waiter)
      lock.unlock()
    }
    if waiter.ticket.wait(in: coroutine) == ChannelTicket.abandoned {
      remove(waiter)
      throw CancellationError()
    }
    switch waiter.outcome {
    case .delivered: return
    case .closed, nil: throw CoroutineError.channelClosed
    }
  }

  @inlinable
  func receive() throws -> T {
    let coroutine = try Coroutine.requireCurrent()
    if coroutine.isCancelled { throw CancellationError() }
    lock.lock()
    let waiter: ReceiveWaiter<T>
    switch state.receive() {
    case .value(let value, let claimed):
      lock.unlock()
      claimed?.wake()
      return value
    case .closed:
      lock.unlock()
      throw CoroutineError.channelClosed
    case .empty:
      waiter = ReceiveWaiter(ticket: ChannelTicket(), index: 0)
      state.enqueue(waiter)
      lock.unlock()
    }
    if waiter.ticket.wait(in: coroutine) == ChannelTicket.abandoned {
      remove(waiter)
      throw CancellationError()
    }
    switch waiter.outcome {
    case .value(let value): return value
    case .closed, nil: throw CoroutineError.channelClosed
    }
  }

  // MARK: Operations that never wait

  @inlinable
  func trySend(_ value: T) -> Bool {
    let decision = lock.withLock { state.send(value) }
    guard case .sent(let claimed) = decision else { return false }
    claimed?.wake()
    return true
  }

  @inlinable
  func tryReceive() -> T? {
    let decision = lock.withLock { state.receive() }
    guard case .value(let value, let claimed) = decision else { return nil }
    claimed?.wake()
    return value
  }

  func close() {
    let woken = lock.withLock { state.close() }
    for claimed in woken { claimed.wake() }
  }

  var isClosed: Bool { lock.withLock { state.isClosed } }

  var count: Int { lock.withLock { state.buffer.count } }

  // MARK: For co_select, which holds `lock` itself (possibly with other channels' locks)

  func sendHoldingLock(_ value: T) -> ChannelStateMachine<T>.SendDecision { state.send(value) }
  func receiveHoldingLock() -> ChannelStateMachine<T>.ReceiveDecision { state.receive() }
  func enqueueHoldingLock(_ waiter: SendWaiter<T>) { state.enqueue(waiter) }
  func enqueueHoldingLock(_ waiter: ReceiveWaiter<T>) { state.enqueue(waiter) }
  @usableFromInline func remove(_ waiter: SendWaiter<T>) { lock.withLock { state.remove(waiter) } }
  @usableFromInline func remove(_ waiter: ReceiveWaiter<T>) {
    lock.withLock { state.remove(waiter) }
  }
}

extension ChannelTicket {
  @usableFromInline
  /// Suspends `coroutine` until a claim wins this ticket or the coroutine is cancelled, and
  /// returns the winning index (``abandoned`` when the coroutine gave up first).
  func wait(in coroutine: Coroutine) -> Int {
    do {
      let _: Void = try coroutine.suspend { resumer in arm(resumer) }
    } catch {
      // Only cancellation ends the wait with an error; `settle` tells whether a claim won
      // first, in which case its result stands and nothing is lost.
    }
    return settle()
  }
}
