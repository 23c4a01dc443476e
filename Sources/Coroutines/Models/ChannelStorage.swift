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

  // A wait arms the coroutine's wait word under the lock, queues a waiter that holds its
  // generation and parks: no resumer, ticket or closure is allocated, only the waiter.

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
      waiter = SendWaiter(coroutine: coroutine, generation: coroutine.armWait(), value: value)
      state.enqueue(waiter)
      lock.unlock()
    }
    coroutine.endWaitIfCancelled(waiter.generation)
    coroutine.park()
    switch waiter.outcome {
    case .delivered: return
    case .closed: throw CoroutineError.channelClosed
    case nil:
      // Only cancellation ends the wait without an outcome; a receiver that claimed first
      // would have written one, so the value was not taken.
      remove(waiter)
      throw CancellationError()
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
      waiter = ReceiveWaiter(coroutine: coroutine, generation: coroutine.armWait())
      state.enqueue(waiter)
      lock.unlock()
    }
    coroutine.endWaitIfCancelled(waiter.generation)
    coroutine.park()
    switch waiter.outcome {
    case .value(let value): return value
    case .closed: throw CoroutineError.channelClosed
    case nil:
      remove(waiter)
      throw CancellationError()
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
