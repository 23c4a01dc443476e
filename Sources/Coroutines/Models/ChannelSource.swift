/// Where a ``CoChannel/Receiver`` takes its values from: a channel, or another source through
/// a transform (`Receiver.map(_:)`). Abstract: the two subclasses below.
// Unchecked: immutable; the channel synchronises itself, and a transform runs on whichever
// thread receives, like an operator's callback on the thread that settles its future.
class ChannelSource<T>: @unchecked Sendable {
  /// The channel underneath every transform.
  var channel: AnyChannel { fatalError("abstract") }
  func receive() throws -> T { fatalError("abstract") }
  func tryReceive() -> T? { fatalError("abstract") }
  func receiveFuture(on scheduler: (any CoroutineScheduler)?) -> CoFuture<T> {
    fatalError("abstract")
  }
  /// Receives for `callback`, which is dropped uncalled if the channel goes away first (see
  /// ``CoChannel/whenReceive(_:)``).
  func receive(
    calling callback: @escaping (Result<T, any Error>) -> Void,
    on scheduler: (any CoroutineScheduler)?
  ) {
    fatalError("abstract")
  }
  /// A `co_select` case that receives from the channel and hands `handler` the value.
  func selectCase<R>(
    onClosed: (() throws -> R)?, handler: @escaping (T) throws -> R
  ) -> any SelectCase<R> {
    fatalError("abstract")
  }
}

/// What a view needs of a channel whatever its element type.
protocol AnyChannel: AnyObject {
  var isClosed: Bool { get }
  var isCancelled: Bool { get }
  func cancel()
}

extension CoChannel: AnyChannel {}

/// The channel itself.
final class DirectChannelSource<T>: ChannelSource<T>, @unchecked Sendable {
  let base: CoChannel<T>

  init(_ base: CoChannel<T>) { self.base = base }

  override var channel: AnyChannel { base }
  override func receive() throws -> T { try base.receive() }
  override func tryReceive() -> T? { base.tryReceive() }
  override func receiveFuture(on scheduler: (any CoroutineScheduler)?) -> CoFuture<T> {
    base.receiveFuture(on: scheduler)
  }
  override func receive(
    calling callback: @escaping (Result<T, any Error>) -> Void,
    on scheduler: (any CoroutineScheduler)?
  ) {
    base.receive(calling: callback, on: scheduler)
  }
  override func selectCase<R>(
    onClosed: (() throws -> R)?, handler: @escaping (T) throws -> R
  ) -> any SelectCase<R> {
    SelectReceive(storage: base.storage, onClosed: onClosed, handler: handler)
  }
}

/// Another source's values through `transform`.
final class MappedChannelSource<Base, T>: ChannelSource<T>, @unchecked Sendable {
  let base: ChannelSource<Base>
  let transform: (Base) throws -> T

  init(_ base: ChannelSource<Base>, _ transform: @escaping (Base) throws -> T) {
    self.base = base
    self.transform = transform
  }

  override var channel: AnyChannel { base.channel }
  override func receive() throws -> T { try transform(base.receive()) }
  override func tryReceive() -> T? { base.tryReceive().flatMap { try? transform($0) } }
  override func receiveFuture(on scheduler: (any CoroutineScheduler)?) -> CoFuture<T> {
    base.receiveFuture(on: scheduler).map(transform)
  }
  override func receive(
    calling callback: @escaping (Result<T, any Error>) -> Void,
    on scheduler: (any CoroutineScheduler)?
  ) {
    let transform = transform
    base.receive(
      calling: { result in callback(result.flatMap { value in Result { try transform(value) } }) },
      on: scheduler)
  }
  override func selectCase<R>(
    onClosed: (() throws -> R)?, handler: @escaping (T) throws -> R
  ) -> any SelectCase<R> {
    let transform = transform
    return base.selectCase(onClosed: onClosed) { try handler(transform($0)) }
  }
}
