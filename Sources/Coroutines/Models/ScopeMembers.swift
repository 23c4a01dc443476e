/// A generator in a ``CoScope`` is cancelled with it: its pending `yield` throws
/// `CancellationError`, its `defer` blocks run and its stack is freed.
extension CoGenerator: CoCancellable {}

/// A generator leaves its scope once it has finished.
extension CoGenerator: ScopeMember {
  func endForScope() { cancel() }
  var hasEndedForScope: Bool { isFinished }
}

/// A channel leaves its scope once closed.
extension CoChannel: ScopeMember {
  func endForScope() { close() }
  var hasEndedForScope: Bool { isClosed }
}

/// An actor leaves its scope once stopped, or once it has ended.
extension CoActor: ScopeMember {
  func endForScope() { stop() }
  var hasEndedForScope: Bool { isStopped }
}

extension CoScope {
  /// Adds a channel, held weakly: the scope closes it when cancelled or released. Values
  /// already buffered are still received; senders and, once drained, receivers get
  /// ``CoroutineError/channelClosed``. A channel leaves the scope once it is closed or
  /// released.
  @discardableResult
  public func add<T>(_ channel: CoChannel<T>) -> CoChannel<T> {
    insertWeakly(channel)
    return channel
  }

  /// Adds an actor, held weakly: the scope stops it when cancelled or released. Messages sent
  /// before are still handled; later ones are rejected with ``CoroutineError/actorStopped``.
  /// An actor leaves the scope once it is stopped, has ended, or is released.
  @discardableResult
  public func add<Message, Reply>(_ actor: CoActor<Message, Reply>) -> CoActor<Message, Reply> {
    insertWeakly(actor)
    return actor
  }
}
