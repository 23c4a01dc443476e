/// A queue that coroutines send values into and receive values from, suspending (never
/// blocking their thread) while it is full or empty.
///
/// ```swift
/// var received: [Int] = []
/// try CoroutineLoop.run {
///   let channel = CoChannel<Int>(capacity: 2)
///   co_launch {
///     for value in 1...3 { try channel.send(value) }
///     channel.close()
///   }
///   for value in channel { received.append(value) }
/// }
/// // received == [1, 2, 3]
/// ```
///
/// - Capacity `0` makes a rendezvous: `send` waits until a receiver takes the value.
///   Capacity `n` buffers up to `n` values; `.max` never fills. ``conflated()`` keeps only
///   the latest value, so its `send` never waits either.
/// - ``close()`` keeps what is buffered: receivers drain it, then `receive` throws
///   ``CoroutineError/channelClosed`` and `for value in channel` ends. Senders still waiting
///   when the channel closes throw ``CoroutineError/channelClosed``: their values were never
///   sent. Nothing sent successfully is lost.
/// - ``cancel()`` is the abrupt end: it drops what is buffered, and everyone waiting, and
///   every later `send` or `receive`, throws `CancellationError`.
/// - A waiting sender or receiver whose coroutine is cancelled throws `CancellationError`,
///   and its value is neither delivered nor duplicated. If the value was taken a moment before
///   the cancellation arrived, the operation completes instead, so nothing is lost.
/// - Any thread may use a channel: coroutines on loops, on dispatch queues, and plain code
///   through ``trySend(_:)`` and ``tryReceive()``.
/// - ``co_select(_:)`` waits on several channel operations at once.
public final class CoChannel<T>: Sequence, @unchecked Sendable {  // `storage` synchronises
  // The operations are `@inlinable` down to the state machine, so a caller in another module
  // runs them specialised for its element type: unspecialised, each operation looked up the
  // metadata of the state machine's generic types in the runtime's tables (over half of a
  // ping-pong round trip).
  @usableFromInline let storage: ChannelStorage<T>

  /// Creates a channel that buffers up to `capacity` values: `0` for a rendezvous, `.max` for
  /// an unbounded channel. A negative capacity stops the program with a message naming it.
  public init(capacity: Int = 0) {
    coPrecondition(capacity >= 0, "CoChannel(capacity:): capacity \(capacity) is negative")
    storage = ChannelStorage(capacity: capacity)
  }

  /// A channel over `storage` (a conflated one, say).
  init(storage: ChannelStorage<T>) {
    self.storage = storage
  }

  /// How many values the channel buffers: `0` for a rendezvous, `.max` when unbounded, `1`
  /// for a conflated channel.
  public var capacity: Int { storage.capacity }

  /// Sends `value`, suspending the coroutine while the channel is full (for a rendezvous
  /// channel: until a receiver takes it).
  ///
  /// - Throws: ``CoroutineError/channelClosed`` if the channel is closed, or closes while
  ///   waiting (the value was not sent); `CancellationError` if the coroutine or the channel
  ///   is cancelled (the value was not sent); ``CoroutineError/notInCoroutine`` outside a
  ///   coroutine.
  @inlinable @inline(__always)
  public func send(_ value: T) throws {
    try storage.send(value)
  }

  /// Receives the oldest value, suspending the coroutine while the channel is empty.
  ///
  /// - Throws: ``CoroutineError/channelClosed`` once the channel is closed and drained;
  ///   `CancellationError` if the coroutine or the channel is cancelled (no value was taken);
  ///   ``CoroutineError/notInCoroutine`` outside a coroutine.
  @inlinable @inline(__always)
  public func receive() throws -> T {
    try storage.receive()
  }

  /// `receive()` for a wait that a dump names `reason` (an actor's mailbox).
  @inlinable @inline(__always)
  func receive(for reason: CoroutineWaitReason) throws -> T {
    try storage.receive(for: reason)
  }

  /// Sends `value` if that needs no waiting: a receiver waits, or the buffer has room. Returns
  /// false (and keeps nothing) when the channel is full or closed. Works outside coroutines.
  @discardableResult
  @inlinable
  public func trySend(_ value: T) -> Bool {
    storage.trySend(value)
  }

  /// Receives a value if one is ready (buffered, or offered by a waiting sender); nil when the
  /// channel is empty or closed and drained. Works outside coroutines.
  @inlinable
  public func tryReceive() -> T? {
    storage.tryReceive()
  }

  /// Closes the channel for sending. Buffered values stay for receivers; waiting receivers
  /// (there are none while values are buffered) and waiting senders throw
  /// ``CoroutineError/channelClosed``. Closing again does nothing.
  public func close() {
    storage.close()
  }

  /// Cancels the channel: unlike ``close()``, which lets receivers drain what is buffered,
  /// it drops the buffered values, and every waiting sender and receiver throws
  /// `CancellationError`. So do later sends and receives; ``trySend(_:)`` returns false and
  /// ``tryReceive()`` nil. A closed channel can still be cancelled, to drop what it buffers.
  /// Cancelling again does nothing.
  public func cancel() {
    storage.cancel()
  }

  /// True once ``close()`` or ``cancel()`` has been called (after `close()`, buffered values
  /// may still be waiting).
  public var isClosed: Bool { storage.isClosed }

  /// True once ``cancel()`` has been called.
  public var isCancelled: Bool { storage.isCancelled }

  /// How many values are buffered right now (a snapshot: other threads may change it).
  public var count: Int { storage.count }

  /// Receives values, inside a coroutine, until the channel is closed and drained.
  ///
  /// The loop also ends if the coroutine is cancelled (its next suspension then throws
  /// `CancellationError`). Iterating outside a coroutine stops the program with a message:
  /// plain code uses ``tryReceive()``.
  @inlinable
  public func makeIterator() -> Iterator {
    Iterator(storage: storage)
  }

  /// Receives from a channel until it is closed and drained; see ``CoChannel/makeIterator()``.
  public struct Iterator: IteratorProtocol {
    @usableFromInline let storage: ChannelStorage<T>

    @inlinable
    init(storage: ChannelStorage<T>) {
      self.storage = storage
    }

    /// The next value, suspending the coroutine while the channel is empty; nil once the
    /// channel is closed and drained, or the coroutine is cancelled.
    @inlinable
    public mutating func next() -> T? {
      do {
        return try storage.receive()
      } catch CoroutineError.notInCoroutine {
        coStop(
          "for value in CoChannel: iterating a channel suspends, so it must run inside a "
            + "coroutine; outside one, use tryReceive()")
      } catch {
        return nil
      }
    }
  }
}
