/// One operation of a `co_select`, type-erased over the channel's element type.
///
/// The select calls ``attempt()`` and ``register(coroutine:generation:)`` while it holds the locks of
/// every channel involved, so checking all the cases and, if none is ready, waiting on all of
/// them happens as one step that no other operation can slip into.
protocol SelectCase<Result>: AnyObject {
  associatedtype Result

  /// The lock of the case's channel.
  var lock: ShortLock { get }

  /// Performs the operation if it can complete now (the caller holds ``lock``); returns the
  /// waiter to wake, if any, or nil when the case is not ready.
  func attempt() -> ClaimedWait??

  /// Leaves a waiter in the channel that completes this case when it wins the coroutine's
  /// armed wait of `generation` (the caller holds ``lock``).
  func register(coroutine: Coroutine, generation: UInt64)

  /// True once this case's waiter won the wait (read by the selecting coroutine after it woke).
  var hasWon: Bool { get }

  /// Removes the waiter after another case won (takes ``lock`` itself).
  func unregister()

  /// Runs the handler with the case's outcome, once the case has won.
  func complete() throws -> Result
}

/// `receive(from:)` in a select.
final class SelectReceive<T, Result>: SelectCase {
  private let storage: ChannelStorage<T>
  private let handler: (T) throws -> Result
  private let onClosed: (() throws -> Result)?
  private var immediate: ReceiveWaiter<T>.Outcome?
  /// On the heap: the case object outlives the wait, and the select's frame may be on a
  /// shared stack. Out of every queue before the case is released (see `unregister()`).
  private var waiter: ReceiveWaiterPointer<T>?

  init(
    storage: ChannelStorage<T>, onClosed: (() throws -> Result)?,
    handler: @escaping (T) throws -> Result
  ) {
    self.storage = storage
    self.onClosed = onClosed
    self.handler = handler
  }

  var lock: ShortLock { storage.lock }

  func attempt() -> ClaimedWait?? {
    switch storage.receiveHoldingLock() {
    case .value(let value, let claimed):
      immediate = .value(value)
      return .some(claimed)
    case .closed:
      immediate = .closed
      return .some(nil)
    case .cancelled:
      immediate = .cancelled
      return .some(nil)
    case .empty:
      return nil
    }
  }

  func register(coroutine: Coroutine, generation: UInt64) {
    let waiter = ReceiveWaiterPointer<T>.allocate(capacity: 1)
    waiter.initialize(to: ReceiveWaiter(coroutine: coroutine, generation: generation))
    self.waiter = waiter
    storage.enqueueHoldingLock(waiter)
  }

  var hasWon: Bool { waiter?.pointee.outcome != nil }

  deinit {
    waiter?.deinitialize(count: 1).deallocate()
  }

  func unregister() {
    if let waiter { storage.remove(waiter) }
  }

  func complete() throws -> Result {
    switch immediate ?? waiter?.pointee.outcome {
    case .value(let value):
      return try handler(value)
    case .cancelled:
      throw CancellationError()
    case .closed, nil:
      guard let onClosed else { throw CoroutineError.channelClosed }
      return try onClosed()
    }
  }
}

/// `send(_:to:)` in a select.
final class SelectSend<T, Result>: SelectCase {
  private let storage: ChannelStorage<T>
  private let value: T
  private let handler: () throws -> Result
  private var immediate: SendWaiter<T>.Outcome?
  /// On the heap: the case object outlives the wait, and the select's frame may be on a
  /// shared stack. Out of every queue before the case is released (see `unregister()`).
  private var waiter: SendWaiterPointer<T>?

  init(storage: ChannelStorage<T>, value: T, handler: @escaping () throws -> Result) {
    self.storage = storage
    self.value = value
    self.handler = handler
  }

  var lock: ShortLock { storage.lock }

  func attempt() -> ClaimedWait?? {
    switch storage.sendHoldingLock(value) {
    case .sent(let claimed):
      immediate = .delivered
      return .some(claimed)
    case .closed:
      immediate = .closed
      return .some(nil)
    case .cancelled:
      immediate = .cancelled
      return .some(nil)
    case .full:
      return nil
    }
  }

  func register(coroutine: Coroutine, generation: UInt64) {
    let waiter = SendWaiterPointer<T>.allocate(capacity: 1)
    waiter.initialize(to: SendWaiter(coroutine: coroutine, generation: generation, value: value))
    self.waiter = waiter
    storage.enqueueHoldingLock(waiter)
  }

  var hasWon: Bool { waiter?.pointee.outcome != nil }

  deinit {
    waiter?.deinitialize(count: 1).deallocate()
  }

  func unregister() {
    if let waiter { storage.remove(waiter) }
  }

  func complete() throws -> Result {
    switch immediate ?? waiter?.pointee.outcome {
    case .delivered:
      return try handler()
    case .cancelled:
      throw CancellationError()
    case .closed, nil:
      throw CoroutineError.channelClosed
    }
  }
}
