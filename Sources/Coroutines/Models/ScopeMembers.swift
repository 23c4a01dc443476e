/// A generator in a ``CoScope`` is cancelled with it: its pending `yield` throws
/// `CancellationError`, its `defer` blocks run and its stack is freed.
extension CoGenerator: CoCancellable {}

extension CoScope {
  /// Adds a channel, held weakly: the scope closes it when cancelled or released. Values
  /// already buffered are still received; senders and, once drained, receivers get
  /// ``CoroutineError/channelClosed``.
  @discardableResult
  public func add<T>(_ channel: CoChannel<T>) -> CoChannel<T> {
    onCancel { [weak channel] in channel?.close() }
    return channel
  }

  /// Adds an actor, held weakly: the scope stops it when cancelled or released. Messages sent
  /// before are still handled; later ones are rejected with ``CoroutineError/actorStopped``.
  @discardableResult
  public func add<Message, Reply>(_ actor: CoActor<Message, Reply>) -> CoActor<Message, Reply> {
    onCancel { [weak actor] in actor?.stop() }
    return actor
  }
}
