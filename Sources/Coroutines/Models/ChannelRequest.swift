import Synchronization

/// A channel operation asked for by a future or a callback (``CoChannel/receiveFuture(on:)``,
/// ``CoChannel/sendFuture(_:on:)``, ``CoChannel/whenReceive(_:)``) rather than by a parked
/// coroutine: it waits in the channel's queue as a coroutine's waiter would, taking its place
/// when it is asked for, and the channel settles it as it would wake that coroutine.
///
/// No helper coroutine waits on the operation's behalf: one that queued itself only once it
/// ran let the operations asked for after it (from the same thread, say) overtake it, and kept
/// its loop running for a channel nobody could reach any more. Instead the request queues a
/// waiter record of its own, under the channel's lock, before the call returns, as Go's
/// `select` queues a record on each channel and kotlinx.coroutines' `select` registers its
/// clauses in the channels' queues; whoever completes the record settles it.
///
/// Claimed as a coroutine's wait is, first claim wins: by the channel (under its lock, whoever
/// pops it: a send, a receive, `close()`, `cancel()`), by the future's `cancel()` withdrawing
/// it, or by the channel going away with it still queued. The winner alone touches what the
/// request delivers.
///
/// Lifetime: while queued, the queue holds a retain of the request (its waiter points back to
/// it), and whoever takes the waiter out of the queue owns that retain. A future refers to its
/// request weakly and the request to its channel weakly, so a request keeps neither its
/// channel nor, once done, its value alive: a channel that only requests wait on goes away
/// when its last user lets go, and the requests still waiting are settled then (see
/// ``abandon()``).
@usableFromInline
class ChannelRequest: @unchecked Sendable {  // `claimed` is atomic; the rest is the winner's
  private let claimed = Atomic<Bool>(false)

  /// True for the first caller only: the request is theirs to complete or withdraw.
  final func claim() -> Bool { !claimed.exchange(true, ordering: .acquiringAndReleasing) }

  /// Under the channel's lock, by whoever popped `request`'s waiter from its queue: wins the
  /// request (the queue's retain passes to the returned wait, released by its `wake()`) or
  /// releases that retain. A request lost here was won by a `cancel()` withdrawing it, which
  /// holds it meanwhile: this release is never the last, so no deinitialiser runs under the
  /// lock.
  @usableFromInline
  static func claimPopped(_ request: Unmanaged<ChannelRequest>) -> ClaimedWait? {
    if request._withUnsafeGuaranteedRef({ $0.claim() }) { return .request(request) }
    request.release()
    return nil
  }

  /// Completes a request won by `claimPopped`, outside the channel's lock, and releases the
  /// retain the queue held.
  @usableFromInline
  static func completeClaimed(_ request: Unmanaged<ChannelRequest>) {
    request.takeRetainedValue().complete()
  }

  /// Delivers the outcome the winning operation wrote into the request's waiter.
  func complete() { fatalError("abstract") }

  /// Claims the request and takes it out of its channel's queue (a future's `cancel()`); false
  /// if the channel claimed it first, and will deliver its outcome.
  func withdraw() -> Bool { fatalError("abstract") }

  /// Settles a request won while its channel goes away: a future is rejected with
  /// ``CoroutineError/channelClosed`` (no value will ever come, and no value was sent), as a
  /// receive from a closed channel would be; a callback is dropped uncalled.
  func abandon() { fatalError("abstract") }
}

/// What a request settles: the future it returned, or the callback it was given.
enum ChannelRequestDelivery<R> {
  case future(ChannelFuture<R>)
  case callback((Result<R, any Error>) -> Void)

  /// Settles the future or calls the callback with `result`, on `scheduler`.
  ///
  /// A loop or group shut down since the request was made takes no work from outside: the
  /// future then settles here, on the completing thread (a future may settle on any thread,
  /// and its value is not lost), and the callback, which must run on its scheduler, is dropped.
  func deliver(_ result: Result<R, any Error>, on scheduler: any CoroutineScheduler) {
    // Handed to the one job that delivers it (an `R` need not be `Sendable`, nor a callback
    // given without `on:`, which runs on the loop it was asked for on).
    nonisolated(unsafe) let result = result
    switch self {
    case .future(let future):
      if !offer({ future.settle(result) }, to: scheduler) { future.settle(result) }
    case .callback(let callback):
      nonisolated(unsafe) let callback = callback
      _ = offer({ callback(result) }, to: scheduler)
    }
  }

  /// A ready outcome, at once on this thread (the operation needed no waiting).
  func deliverNow(_ result: Result<R, any Error>) {
    switch self {
    case .future(let future): future.settle(result)
    case .callback(let callback): callback(result)
    }
  }

  /// Rejects a future with ``CoroutineError/channelClosed`` on `scheduler`; drops a callback.
  func abandon(on scheduler: any CoroutineScheduler) {
    guard case .future(let future) = self else { return }
    let closed: @Sendable () -> Void = { _ = future.settle(.failure(CoroutineError.channelClosed)) }
    if !offer(closed, to: scheduler) { closed() }
  }
}

/// A receive asked for by ``CoChannel/receiveFuture(on:)`` or ``CoChannel/whenReceive(_:)``.
final class ChannelReceiveRequest<T>: ChannelRequest, @unchecked Sendable {  // see the base
  /// On the heap, owned by the request: the channel's queue points at it.
  let waiter = ReceiveWaiterPointer<T>.allocate(capacity: 1)
  weak var storage: ChannelStorage<T>?
  let scheduler: any CoroutineScheduler
  let delivery: ChannelRequestDelivery<T>

  init(
    storage: ChannelStorage<T>, scheduler: any CoroutineScheduler,
    delivery: ChannelRequestDelivery<T>
  ) {
    self.storage = storage
    self.scheduler = scheduler
    self.delivery = delivery
    super.init()
    waiter.initialize(to: ReceiveWaiter(request: Unmanaged.passUnretained(self)))
  }

  deinit {
    waiter.deinitialize(count: 1).deallocate()
  }

  override func complete() {
    // Read, not taken: the waiter is the winner's, and goes with the request.
    switch waiter.pointee.outcome {
    case .value(let value): delivery.deliver(.success(value), on: scheduler)
    case .closed: delivery.deliver(.failure(CoroutineError.channelClosed), on: scheduler)
    case .cancelled, nil: delivery.deliver(.failure(CancellationError()), on: scheduler)
    }
  }

  override func withdraw() -> Bool {
    guard claim() else { return false }
    // Nil while the channel goes away: its deinitialiser takes the waiter out instead.
    if let storage, storage.withdraw(waiter) { Unmanaged.passUnretained(self).release() }
    return true
  }

  override func abandon() { delivery.abandon(on: scheduler) }
}

/// A send asked for by ``CoChannel/sendFuture(_:on:)``.
final class ChannelSendRequest<T>: ChannelRequest, @unchecked Sendable {  // see the base
  /// On the heap, owned by the request: the channel's queue points at it.
  let waiter = SendWaiterPointer<T>.allocate(capacity: 1)
  weak var storage: ChannelStorage<T>?
  let scheduler: any CoroutineScheduler
  let future: ChannelFuture<Void>

  init(
    value: T, storage: ChannelStorage<T>, scheduler: any CoroutineScheduler,
    future: ChannelFuture<Void>
  ) {
    self.storage = storage
    self.scheduler = scheduler
    self.future = future
    super.init()
    waiter.initialize(to: SendWaiter(request: Unmanaged.passUnretained(self), value: value))
  }

  deinit {
    waiter.deinitialize(count: 1).deallocate()
  }

  override func complete() {
    let delivery = ChannelRequestDelivery<Void>.future(future)
    switch waiter.pointee.outcome {
    case .delivered: delivery.deliver(.success(()), on: scheduler)
    case .closed: delivery.deliver(.failure(CoroutineError.channelClosed), on: scheduler)
    case .cancelled, nil: delivery.deliver(.failure(CancellationError()), on: scheduler)
    }
  }

  override func withdraw() -> Bool {
    guard claim() else { return false }
    if let storage, storage.withdraw(waiter) { Unmanaged.passUnretained(self).release() }
    return true
  }

  override func abandon() {
    ChannelRequestDelivery<Void>.future(future).abandon(on: scheduler)
  }
}

/// The future of a channel operation that had to wait: cancelling it withdraws the operation.
final class ChannelFuture<T>: CoFuture<T>, @unchecked Sendable {  // `request` is set once
  /// Weak: the queue keeps the request alive while it waits; once done, it goes.
  weak var request: ChannelRequest?

  /// Withdraws the operation and rejects the future with `CancellationError`, unless the
  /// channel completed the operation first: then the future settles with its outcome.
  override func cancel() {
    guard let request else { return }  // completed: its outcome is on its way
    if request.withdraw() { settle(.failure(CancellationError())) }
  }
}
