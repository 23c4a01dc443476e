extension CoChannel {
  /// A receive-only view of this channel: hand it to a consumer that must not send or close.
  public var receiver: Receiver { Receiver(source: DirectChannelSource(self)) }

  /// A send-only view of this channel: hand it to a producer that must not receive.
  public var sender: Sender { Sender(channel: self) }

  /// The receiving end of a channel, alone: it can receive and cancel, not send or close.
  ///
  /// ```swift
  /// let numbers = CoChannel<Int>(capacity: 8)
  /// let labels = numbers.receiver.map { "#\($0)" }
  /// numbers.trySend(1)
  /// let first = labels.tryReceive()  // "#1"
  /// ```
  ///
  /// A receiver made by `map(_:)` receives from the same channel and transforms each value
  /// as it is taken; it neither buffers nor runs ahead.
  public struct Receiver: Sequence, Sendable {
    let source: ChannelSource<T>

    /// Receives the next value, suspending the coroutine while the channel is empty; see
    /// ``CoChannel/receive()``. An error thrown by a `map(_:)` transform is thrown here (the
    /// value it was given was taken).
    public func receive() throws -> T { try source.receive() }

    /// A value if one is ready, else nil; see ``CoChannel/tryReceive()``. A value that a
    /// `map(_:)` transform fails on is taken and dropped: the result is nil.
    public func tryReceive() -> T? { source.tryReceive() }

    /// A future of the next value, for code outside coroutines; see
    /// ``CoChannel/receiveFuture(on:)``.
    ///
    /// - Parameter scheduler: Where the future settles, if the receive must wait.
    public func receiveFuture(on scheduler: (any CoroutineScheduler)? = nil) -> CoFuture<T> {
      source.receiveFuture(on: scheduler)
    }

    /// Receives the next value and calls `callback` with it once; see
    /// ``CoChannel/whenReceive(_:)``.
    ///
    /// - Parameter callback: Called with the outcome.
    public func whenReceive(_ callback: @escaping (Result<T, any Error>) -> Void) {
      source.receive(calling: callback, on: nil)
    }

    /// Receives the next value and calls `callback` with it once, waiting on `scheduler`; see
    /// ``CoChannel/whenReceive(on:_:)``.
    ///
    /// - Parameters:
    ///   - scheduler: Where `callback` is called, if the receive must wait.
    ///   - callback: Called with the outcome; `@Sendable`, as it may run on another thread.
    public func whenReceive(
      on scheduler: (any CoroutineScheduler)?,
      _ callback: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
      source.receive(calling: callback, on: scheduler)
    }

    /// A receiver of `transform` applied to each value of this one, as it is received.
    ///
    /// - Parameter transform: Runs on the receiving coroutine (or thread); an error it throws
    ///   is thrown by the receive that took the value.
    public func map<U>(_ transform: @escaping (T) throws -> U) -> CoChannel<U>.Receiver {
      CoChannel<U>.Receiver(source: MappedChannelSource(source, transform))
    }

    /// Cancels the channel; see ``CoChannel/cancel()``.
    public func cancel() { source.channel.cancel() }

    /// True once the channel is closed or cancelled.
    public var isClosed: Bool { source.channel.isClosed }

    /// True once the channel is cancelled.
    public var isCancelled: Bool { source.channel.isCancelled }

    /// Receives values, inside a coroutine, until the channel is closed and drained; see
    /// ``CoChannel/makeIterator()``.
    public func makeIterator() -> Iterator { Iterator(source: source) }

    /// Receives from a receiver until its channel is closed and drained.
    public struct Iterator: IteratorProtocol {
      let source: ChannelSource<T>

      /// The next value, suspending the coroutine while the channel is empty; nil once the
      /// channel is closed and drained, the coroutine is cancelled, or a transform throws.
      public mutating func next() -> T? {
        do {
          return try source.receive()
        } catch CoroutineError.notInCoroutine {
          coStop(
            "for value in CoChannel.Receiver: iterating a channel suspends, so it must run "
              + "inside a coroutine; outside one, use tryReceive()")
        } catch {
          return nil
        }
      }
    }
  }

  /// The sending end of a channel, alone: it can send and close, not receive.
  public struct Sender: Sendable {
    let channel: CoChannel<T>

    /// Sends `value`, suspending the coroutine while the channel is full; see
    /// ``CoChannel/send(_:)``.
    public func send(_ value: T) throws { try channel.send(value) }

    /// Sends `value` if that needs no waiting; see ``CoChannel/trySend(_:)``.
    @discardableResult
    public func trySend(_ value: T) -> Bool { channel.trySend(value) }

    /// A future fulfilled once `value` has been sent; see ``CoChannel/sendFuture(_:on:)``.
    ///
    /// - Parameters:
    ///   - value: What to send.
    ///   - scheduler: Where the future settles, if the send must wait.
    public func sendFuture(
      _ value: T, on scheduler: (any CoroutineScheduler)? = nil
    ) -> CoFuture<Void> {
      channel.sendFuture(value, on: scheduler)
    }

    /// Closes the channel; see ``CoChannel/close()``.
    public func close() { channel.close() }

    /// True once the channel is closed or cancelled.
    public var isClosed: Bool { channel.isClosed }
  }
}
