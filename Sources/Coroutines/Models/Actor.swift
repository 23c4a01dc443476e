/// Starts an actor: a coroutine that handles the messages sent to it one at a time, in the
/// order they were sent, on `scheduler`.
///
/// ```swift
/// let counter = co_actor { (mailbox: CoMailbox<Int, Int>) in
///   var total = 0
///   for message in mailbox {
///     total += message.value
///     message.reply(total)
///   }
/// }
/// let first = try co_await(counter.send(5))  // 5
/// let second = try counter.send(10).await()  // 15
/// counter.stop()
/// ```
///
/// The actor's state lives in its coroutine, so it needs no lock.
///
/// - If handling a message throws, that message's future is rejected with the error and the
///   actor goes on: `body` is called again with the same mailbox and carries on with the next
///   message. Variables declared inside `body` start afresh then, so keep state that must
///   survive an error outside `body` (or catch inside the loop). If `body` throws before
///   taking any message since it was (re)started, the actor ends.
/// - The actor ends when `body` returns, which `for message in mailbox` does once the actor
///   is ``CoActor/stop()``ped and every earlier message has been taken.
/// - Messages sent after `stop()`, still in the mailbox when the actor ends, or released
///   unanswered, reject with ``CoroutineError/actorStopped``. None is dropped silently.
///
/// - Parameters:
///   - scheduler: Where the actor runs; `nil` as for ``co_launch(on:name:stackSize:_:)``. The
///     body is `@Sendable`, as it runs on another thread than the code that wrote it (see
///     "Sendable bodies" in <doc:CoroutinesSchedulersAndLoop>); ``co_actor(name:stackSize:_:)``,
///     on the default scheduler, takes a `sending` one.
///     A live actor is a long-lived coroutine: give it its own scheduler (a `DispatchQueue`)
///     when the loop that would run it must be able to finish, or stop it first.
///   - name: A name for diagnostics.
///   - stackSize: The actor's stack size in bytes; see ``co_launch(on:name:stackSize:_:)``.
///   - body: The actor: usually one `for message in mailbox` loop.
public func co_actor<Message, Reply>(
  on scheduler: (any CoroutineScheduler)?,
  name: String? = nil,
  stackSize: Int? = nil,
  _ body: @escaping @Sendable (_ mailbox: CoMailbox<Message, Reply>) throws -> Void
) -> CoActor<Message, Reply> {
  makeActor(on: scheduler, name: name, stackSize: stackSize, body)
}

/// Starts an actor on the default scheduler (as ``co_launch(name:stackSize:_:)`` chooses it):
/// as ``co_actor(on:name:stackSize:_:)``, with a `sending` body rather than a `@Sendable` one.
/// The default scheduler may run the actor on another thread at the same time as the code that
/// started it (a ``CoroutineLoopGroup`` moves coroutines between its loops), so the body may
/// capture non-Sendable values only if that code does not go on using them.
///
/// - Parameters:
///   - name: A name for diagnostics.
///   - stackSize: The actor's stack size in bytes; see ``co_launch(on:name:stackSize:_:)``.
///   - body: The actor: usually one `for message in mailbox` loop; handed over (`sending`).
/// - Returns: The actor's handle.
public func co_actor<Message, Reply>(
  name: String? = nil,
  stackSize: Int? = nil,
  _ body: sending @escaping (_ mailbox: CoMailbox<Message, Reply>) throws -> Void
) -> CoActor<Message, Reply> {
  makeActor(on: nil, name: name, stackSize: stackSize, body)
}

/// Both forms of `co_actor`.
func makeActor<Message, Reply>(
  on scheduler: (any CoroutineScheduler)?, name: String?, stackSize: Int?,
  _ body: @escaping (_ mailbox: CoMailbox<Message, Reply>) throws -> Void
) -> CoActor<Message, Reply> {
  let mailbox = CoMailbox<Message, Reply>()
  // Detached: the actor lives as long as its handle, not as long as the coroutine making it.
  let task = launchCoroutine(
    on: scheduler, name: name, stackSize: stackSize, stack: nil, detached: true
  ) {
    defer { mailbox.shut() }
    while true {
      do {
        try body(mailbox)
        return
      } catch {
        // Blame the message being handled, if the body took one since it (re)started;
        // otherwise the error is not about any message, and the actor ends with it.
        guard let handled = mailbox.takeCurrent() else { throw error }
        handled.fail(error)
      }
    }
  }
  return CoActor(mailbox: mailbox, task: task)
}

/// A handle on an actor started with ``co_actor(on:name:stackSize:_:)``: send it messages,
/// stop it. Releasing the last handle stops the actor.
public final class CoActor<Message, Reply>: @unchecked Sendable {
  // @unchecked: both fields are immutable and synchronise themselves.
  private let mailbox: CoMailbox<Message, Reply>
  /// The actor's coroutine; settles once the actor has ended and left its stack.
  let task: CoTask<Void>

  init(mailbox: CoMailbox<Message, Reply>, task: CoTask<Void>) {
    self.mailbox = mailbox
    self.task = task
  }

  deinit {
    mailbox.channel.close()
  }

  /// Sends `message`; never waits. Returns the future of the actor's reply, which a
  /// coroutine may `co_await`.
  ///
  /// The future is rejected with ``CoroutineError/actorStopped`` if the actor was stopped
  /// first, or ends before answering.
  @discardableResult
  public func send(_ message: Message) -> CoFuture<Reply> {
    let envelope = CoMessage<Message, Reply>(message)
    if !mailbox.channel.trySend(envelope) { envelope.fail(CoroutineError.actorStopped) }
    return envelope.promise
  }

  /// Stops the actor: messages sent from now on are rejected with
  /// ``CoroutineError/actorStopped``; the ones sent before are still handled, in order, and
  /// then the actor's `for message in mailbox` loop ends. Stopping again does nothing.
  public func stop() {
    mailbox.channel.close()
  }

  /// True once the actor has ended and its coroutine has left its stack.
  public var isFinished: Bool { task.isSettled }

  /// True once the actor was stopped or has ended: it takes no more messages.
  var isStopped: Bool { mailbox.channel.isClosed }
}
