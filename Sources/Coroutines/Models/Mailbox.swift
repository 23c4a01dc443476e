/// A message sent to a ``CoActor``, with the means to answer it.
///
/// Answer each message exactly once, with ``reply(_:)`` or ``fail(_:)``; later answers are
/// ignored. A message released without an answer rejects its sender's future with
/// ``CoroutineError/actorStopped``, so no sender waits forever.
public final class CoMessage<Message, Reply>: @unchecked Sendable {
  // @unchecked: `value` is immutable; `promise` synchronises itself.
  /// What the sender sent.
  public let value: Message
  let promise = CoPromise<Reply>()

  init(_ value: Message) {
    self.value = value
  }

  deinit {
    promise.reject(CoroutineError.actorStopped)
  }

  /// Fulfils the sender's future with `reply`.
  public func reply(_ reply: Reply) {
    promise.fulfill(reply)
  }

  /// Rejects the sender's future with `error`.
  public func fail(_ error: any Error) {
    promise.reject(error)
  }

  /// True once the message has been answered.
  public var isAnswered: Bool { promise.isSettled }
}

/// An actor's incoming messages, in the order they were sent: iterate it with
/// `for message in mailbox`.
///
/// The loop ends once the actor is stopped and every message sent before ``CoActor/stop()``
/// has been taken. Only the actor's own coroutine should take messages.
public final class CoMailbox<Message, Reply>: Sequence, @unchecked Sendable {
  // @unchecked: `channel` synchronises itself; `current` is touched only by the actor's
  // coroutine, which runs one step at a time.
  let channel = CoChannel<CoMessage<Message, Reply>>(capacity: .max)
  /// The last message taken: the one being handled if the body throws.
  private var current: CoMessage<Message, Reply>?

  init() {}

  /// Takes the next message, suspending the actor while the mailbox is empty.
  ///
  /// - Throws: ``CoroutineError/actorStopped`` once the actor is stopped and the mailbox is
  ///   drained; `CancellationError` if the actor's coroutine is cancelled.
  public func receive() throws -> CoMessage<Message, Reply> {
    do {
      let message = try channel.receive(for: .actor)
      current = message
      return message
    } catch CoroutineError.channelClosed {
      throw CoroutineError.actorStopped
    }
  }

  /// The messages, until the actor is stopped and they have all been taken.
  public func makeIterator() -> Iterator {
    Iterator(mailbox: self)
  }

  /// Takes messages from a mailbox; see ``CoMailbox``.
  public struct Iterator: IteratorProtocol {
    let mailbox: CoMailbox

    /// The next message, suspending the actor while there is none; nil once the actor is
    /// stopped and the mailbox is drained.
    public mutating func next() -> CoMessage<Message, Reply>? {
      try? mailbox.receive()
    }
  }

  /// The message taken since the last call, if any (the actor's coroutine only).
  func takeCurrent() -> CoMessage<Message, Reply>? {
    defer { current = nil }
    return current
  }

  /// Closes the mailbox and rejects every message still in it.
  func shut() {
    channel.close()
    while let message = channel.tryReceive() { message.fail(CoroutineError.actorStopped) }
    current = nil
  }
}
