import CUContext

/// A channel's state behind its lock. Decisions are the state machine's; this type takes the
/// lock, performs what the state machine decided once the lock is dropped (waking
/// coroutines), and suspends the calling coroutine when it must wait.
@usableFromInline
final class ChannelStorage<T>: @unchecked Sendable {  // `state` is only touched under `lock`
  @usableFromInline let lock = ShortLock()
  // Unchecked: only touched under `lock`, and no access spans a suspension (the state machine
  // decides, then the lock is dropped before anyone waits or is woken).
  @usableFromInline @exclusivity(unchecked) var state: ChannelStateMachine<T>

  init(capacity: Int, dropsOldest: Bool = false) {
    state = ChannelStateMachine(capacity: capacity, dropsOldest: dropsOldest)
  }

  var capacity: Int { state.capacity }

  var dropsOldest: Bool { state.dropsOldest }

  // MARK: Operations that may wait

  // A wait arms the coroutine's wait word under the lock, queues a pointer to a waiter in its
  // own frame and parks: nothing is allocated and nothing retained, except on a shared stack,
  // whose frames may not be pointed into while parked (another coroutine may be using those
  // addresses when the other side writes the outcome), so the waiter goes on the heap there.

  @inlinable @inline(__always)
  func send(_ value: T) throws {
    // The running coroutine outlives the call: a guaranteed reference spares the retain and
    // release that each call on an unowned one would cost.
    try Coroutine.requireCurrentUnretained()._withUnsafeGuaranteedRef {
      try send(value, from: $0)
    }
  }

  @inlinable @inline(__always)
  func send(_ value: T, from coroutine: Coroutine) throws {
    if coroutine.isCancelled { throw CancellationError() }
    lock.lock()
    switch state.send(value) {
    case .sent(let claimed):
      lock.unlock()
      claimed?.wake()
      return
    case .closed:
      lock.unlock()
      throw CoroutineError.channelClosed
    case .cancelled:
      lock.unlock()
      throw CancellationError()
    case .full:
      break
    }
    let generation = coroutine.armWait(.channelSend)
    var waiter = SendWaiter(coroutine: coroutine, generation: generation, value: value)
    if coroutine.usesSharedStack {
      let onHeap = SendWaiterPointer<T>.allocate(capacity: 1)
      onHeap.initialize(to: waiter)
      defer { onHeap.deinitialize(count: 1).deallocate() }
      try waitToSend(onHeap, generation, in: coroutine)
    } else {
      try withUnsafeMutablePointer(to: &waiter) { try waitToSend($0, generation, in: coroutine) }
    }
  }

  /// Queues `waiter` (the lock is held, and the coroutine's wait of `generation` armed),
  /// unlocks and parks until a receiver, `close()` or cancellation ends the wait.
  @inlinable @inline(__always)
  func waitToSend(
    _ waiter: SendWaiterPointer<T>, _ generation: UInt64, in coroutine: Coroutine
  ) throws {
    state.enqueue(waiter)
    lock.unlock()
    coroutine.endWaitIfCancelled(generation)
    if let fiber = coroutine.fiberToPark() { cu_fiber_suspend(fiber) }
    switch waiter.pointee.outcome {
    case .delivered: return
    case .closed: throw CoroutineError.channelClosed
    case .cancelled: throw CancellationError()
    case nil:
      // Only cancellation ends the wait without an outcome; a receiver that claimed first
      // would have written one, so the value was not taken.
      remove(waiter)
      throw CancellationError()
    }
  }

  @inlinable @inline(__always)
  func receive(for reason: CoroutineWaitReason = .channelReceive) throws -> T {
    // As in `send(_:)`.
    try Coroutine.requireCurrentUnretained()._withUnsafeGuaranteedRef {
      try receive(for: reason, from: $0)
    }
  }

  @inlinable @inline(__always)
  func receive(for reason: CoroutineWaitReason, from coroutine: Coroutine) throws -> T {
    if coroutine.isCancelled { throw CancellationError() }
    lock.lock()
    switch state.receive() {
    case .value(let value, let claimed):
      lock.unlock()
      claimed?.wake()
      return value
    case .closed:
      lock.unlock()
      throw CoroutineError.channelClosed
    case .cancelled:
      lock.unlock()
      throw CancellationError()
    case .empty:
      break
    }
    let generation = coroutine.armWait(reason)
    var waiter = ReceiveWaiter<T>(coroutine: coroutine, generation: generation)
    if coroutine.usesSharedStack {
      let onHeap = ReceiveWaiterPointer<T>.allocate(capacity: 1)
      onHeap.initialize(to: waiter)
      defer { onHeap.deinitialize(count: 1).deallocate() }
      return try waitToReceive(onHeap, generation, in: coroutine)
    }
    return try withUnsafeMutablePointer(to: &waiter) {
      try waitToReceive($0, generation, in: coroutine)
    }
  }

  /// Queues `waiter` (the lock is held, and the coroutine's wait of `generation` armed),
  /// unlocks and parks until a sender, `close()` or cancellation ends the wait.
  @inlinable @inline(__always)
  func waitToReceive(
    _ waiter: ReceiveWaiterPointer<T>, _ generation: UInt64, in coroutine: Coroutine
  ) throws -> T {
    state.enqueue(waiter)
    lock.unlock()
    coroutine.endWaitIfCancelled(generation)
    if let fiber = coroutine.fiberToPark() { cu_fiber_suspend(fiber) }
    // A read, not `take()`: a cancelled waiter reads its (empty) outcome while a sender, under
    // the lock, may still pop it and read its other fields; a modifying access to the waiter
    // would overlap that read (ThreadSanitizer reported it), a read does not.
    switch waiter.pointee.outcome {
    case .value(let value): return value
    case .closed: throw CoroutineError.channelClosed
    case .cancelled: throw CancellationError()
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

  func cancel() {
    var dropped = Ring<T>()
    let woken = lock.withLock { state.cancel(droppingInto: &dropped) }
    _ = consume dropped  // released here, outside the lock
    for claimed in woken { claimed.wake() }
  }

  var isClosed: Bool { lock.withLock { state.isClosed } }

  var isCancelled: Bool { lock.withLock { state.isCancelled } }

  var count: Int { lock.withLock { state.buffer.count } }

  // MARK: For futures and callbacks (see ChannelRequest)

  /// Receives a value if one is ready, else queues `request` to wait for one, as one step
  /// under the lock: the request takes its place in the queue before this returns.
  func receive(orQueue request: ChannelReceiveRequest<T>)
    -> ChannelStateMachine<T>
    .ReceiveDecision
  {
    lock.lock()
    let decision = state.receive()
    if case .empty = decision {
      _ = Unmanaged.passRetained(request)  // the queue's retain (see ChannelRequest)
      state.enqueue(request.waiter)
    }
    lock.unlock()
    if case .value(_, let claimed) = decision { claimed?.wake() }
    return decision
  }

  /// Sends `request`'s value if that needs no waiting, else queues `request` until a receiver
  /// takes it, as one step under the lock.
  func send(orQueue request: ChannelSendRequest<T>) -> ChannelStateMachine<T>.SendDecision {
    lock.lock()
    let decision = state.send(request.waiter.pointee.value)
    if case .full = decision {
      _ = Unmanaged.passRetained(request)  // the queue's retain (see ChannelRequest)
      state.enqueue(request.waiter)
    }
    lock.unlock()
    if case .sent(let claimed) = decision { claimed?.wake() }
    return decision
  }

  /// Takes a withdrawn request's waiter out of its queue; true if it was still queued.
  func withdraw(_ waiter: ReceiveWaiterPointer<T>) -> Bool {
    lock.withLock { state.withdraw(waiter) }
  }

  /// Takes a withdrawn request's waiter out of its queue; true if it was still queued.
  func withdraw(_ waiter: SendWaiterPointer<T>) -> Bool {
    lock.withLock { state.withdraw(waiter) }
  }

  /// The channel is gone: the futures and callbacks still waiting on it are settled (a future
  /// rejected as closed, a callback dropped), so that nothing waits for ever on a channel that
  /// nobody can send to or receive from any more.
  deinit {
    state.abandonRequests()
  }

  // MARK: For co_select, which holds `lock` itself (possibly with other channels' locks)

  func sendHoldingLock(_ value: T) -> ChannelStateMachine<T>.SendDecision { state.send(value) }
  func receiveHoldingLock() -> ChannelStateMachine<T>.ReceiveDecision { state.receive() }
  func enqueueHoldingLock(_ waiter: SendWaiterPointer<T>) { state.enqueue(waiter) }
  func enqueueHoldingLock(_ waiter: ReceiveWaiterPointer<T>) { state.enqueue(waiter) }
  @usableFromInline func remove(_ waiter: SendWaiterPointer<T>) {
    lock.withLock { state.remove(waiter) }
  }
  @usableFromInline func remove(_ waiter: ReceiveWaiterPointer<T>) {
    lock.withLock { state.remove(waiter) }
  }
}
