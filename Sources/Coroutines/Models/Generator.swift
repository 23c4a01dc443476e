import CUContext

/// Makes a lazy sequence whose values a coroutine produces with `yield`.
///
/// ```swift
/// let squares = co_sequence { (yield: CoYield<Int>) in
///   for n in 1... { try yield(n * n) }
/// }
/// let firstThree = Array(squares.prefix(3))  // [1, 4, 9]
/// ```
///
/// The body runs only as far as the values asked for: each `next()` runs it up to its next
/// `yield`. It runs in its own coroutine, with its own stack, so it can yield from deep inside
/// loops and recursion.
///
/// - Parameters:
///   - scheduler: Where the producer runs; `next()` from a coroutine suspends that coroutine
///     until a value is yielded, and from plain code blocks the thread. The body is
///     `@Sendable`, as it runs on another thread than the code that wrote it (see "Sendable
///     bodies" in <doc:CoroutinesSchedulersAndLoop>). `nil` makes an inline generator, as
///     ``co_sequence(name:stackSize:_:)`` does.
///   - name: A name for diagnostics.
///   - stackSize: The producer's stack size in bytes; see ``co_launch(on:name:stackSize:_:)``.
///   - body: The producer. It hands each value to the consumer with `try yield(value)`; it
///     ends the sequence by returning, or by throwing (the error stays readable through
///     ``CoGenerator/error`` and ``CoGenerator/nextOrThrow()``).
/// - Returns: The generator: a `Sequence` that is its own iterator.
///
/// Stopping early unwinds the body: ``CoGenerator/cancel()``, or dropping the generator (as
/// breaking out of a `for` loop over it does), makes its pending `yield` throw
/// `CancellationError`, so its `defer` blocks run and its stack returns to the pool. For an
/// inline generator this has happened by the time `cancel()` returns.
///
/// An inline generator's body may also suspend (`co_await`, `co_delay`, a channel): `next()`
/// then waits for it like any awaited work, suspending the consuming coroutine, or blocking
/// the thread in plain code. See <doc:Generators> for the details.
public func co_sequence<T>(
  on scheduler: (any CoroutineScheduler)?,
  name: String? = nil,
  stackSize: Int? = nil,
  _ body: @escaping @Sendable (_ yield: CoYield<T>) throws -> Void
) -> CoGenerator<T> {
  guard let scheduler else { return co_sequence(name: name, stackSize: stackSize, body) }
  if let stackSize { CoroutineStack.validate(stackSize, in: "co_sequence(stackSize:)") }
  return CoGenerator(
    engine: ScheduledGenerator(on: scheduler, name: name, stackSize: stackSize, body: body))
}

/// Makes an inline generator: its body runs on the thread that asks for the next value, as far
/// as the values asked for; as ``co_sequence(on:name:stackSize:_:)`` otherwise, with a `sending`
/// body rather than a `@Sendable` one. A generator is `Sendable`, so the code that asks for its
/// values may run on another thread than the code that made it (a coroutine it was handed to,
/// on a ``CoroutineLoopGroup`` or a queue): the body may capture non-Sendable values only if
/// that code does not go on using them.
///
/// - Parameters:
///   - name: A name for diagnostics.
///   - stackSize: The producer's stack size in bytes; see ``co_launch(on:name:stackSize:_:)``.
///   - body: The producer: it hands over each value with `try yield(value)`; handed over to
///     the generator (`sending`).
/// - Returns: The generator: a `Sequence` that is its own iterator.
public func co_sequence<T>(
  name: String? = nil,
  stackSize: Int? = nil,
  _ body: sending @escaping (_ yield: CoYield<T>) throws -> Void
) -> CoGenerator<T> {
  if let stackSize { CoroutineStack.validate(stackSize, in: "co_sequence(stackSize:)") }
  let size = stackSize ?? CoroutineStack.defaultSize
  let page = cu_page_size()
  let rounded = (size + page - 1) / page * page
  return CoGenerator(engine: InlineGenerator(name: name, stackSize: rounded, body: body))
}

/// What a generator's body calls to hand over a value: `try yield(value)`.
public struct CoYield<T>: Sendable {
  let engine: any GeneratorEngine<T>
  /// The engine when it is inline: called directly, so that the caller's module specialises
  /// it, and without a retain per call (`engine` keeps it alive).
  @usableFromInline let inline: Unmanaged<InlineGenerator<T>>?

  init(engine: any GeneratorEngine<T>) {
    self.engine = engine
    self.inline = (engine as? InlineGenerator<T>).map { Unmanaged.passUnretained($0) }
  }

  /// Hands `value` to the consumer and waits until it asks for the next one.
  ///
  /// - Throws: `CancellationError` when the generator has been cancelled or dropped: let it
  ///   propagate so the body unwinds. ``CoroutineError/yieldOutsideGenerator`` when called
  ///   anywhere but in the generator's own body.
  @inlinable @inline(__always)
  public func callAsFunction(_ value: T) throws {
    if let inline { return try inline._withUnsafeGuaranteedRef { try $0.yield(value) } }
    try yieldToEngine(value)
  }

  @usableFromInline
  func yieldToEngine(_ value: T) throws {
    try engine.yield(value)
  }
}

/// A lazy sequence produced by a coroutine; see ``co_sequence(on:name:stackSize:_:)``.
///
/// A generator is its own iterator: iterating it twice continues where the first loop left
/// off. Dropping it (the last reference) cancels it.
public final class CoGenerator<T>: Sequence, IteratorProtocol, @unchecked Sendable {
  // @unchecked: all state is in the engine, which synchronises it.
  let engine: any GeneratorEngine<T>
  /// The engine when it is inline: called directly, so that the caller's module specialises
  /// it, and without a retain per call (`engine` keeps it alive).
  @usableFromInline let inline: Unmanaged<InlineGenerator<T>>?

  init(engine: any GeneratorEngine<T>) {
    self.engine = engine
    self.inline = (engine as? InlineGenerator<T>).map { Unmanaged.passUnretained($0) }
  }

  deinit {
    engine.cancel()
  }

  /// The next value, running the body up to its next `yield`; nil once the body has returned,
  /// thrown (see ``error``) or been cancelled.
  ///
  /// If the consuming coroutine is cancelled while it waits for a value, the generator is
  /// cancelled too and this returns nil (``nextOrThrow()`` throws `CancellationError`). If
  /// ``cancel()`` on another thread is unwinding an inline body at that moment, this waits for
  /// it and returns nil.
  @inlinable @inline(__always)
  public func next() -> T? {
    if let inline { return try? inline._withUnsafeGuaranteedRef { try $0.next() } }
    return try? engineNext()
  }

  /// The next value, or nil at the end of the sequence.
  ///
  /// - Throws: The error the body threw, on this call and every later one; `CancellationError`
  ///   if the consuming coroutine was cancelled while waiting (the generator is then cancelled).
  @inlinable @inline(__always)
  public func nextOrThrow() throws -> T? {
    if let inline { return try inline._withUnsafeGuaranteedRef { try $0.next() } }
    return try engineNext()
  }

  @usableFromInline
  func engineNext() throws -> T? {
    try engine.next()
  }

  /// Stops the generator: its pending `yield` throws `CancellationError`, so its `defer` blocks
  /// run and its stack returns to the pool, and `next()` returns nil from now on. For an
  /// inline generator the body has unwound when this returns (unless another thread is inside
  /// `next()` right now: that call then finishes the unwinding before it returns). A body
  /// that never started never runs.
  public func cancel() {
    engine.cancel()
  }

  /// The error the body threw, once it has; nil while it runs, when it returned normally, or
  /// when it ended because the generator was cancelled.
  public var error: (any Error)? { engine.failure }

  /// True once the body has finished (returned, thrown, or unwound after ``cancel()``) and left
  /// its stack, or was cancelled before it ever ran.
  public var isFinished: Bool { engine.isFinished }
}

/// The two ways a generator's producer runs: inline on the consumer's thread, or on a
/// scheduler.
protocol GeneratorEngine<Element>: AnyObject, Sendable {
  associatedtype Element

  /// The next value, nil at the end; throws the body's error, or `CancellationError` if the
  /// consuming coroutine was cancelled while waiting.
  func next() throws -> Element?
  /// Called by the body's `yield`.
  func yield(_ value: Element) throws
  func cancel()
  var failure: (any Error)? { get }
  var isFinished: Bool { get }
  /// Settles once the producer has left its stack (or was cancelled before it started).
  var finished: CoFuture<Void> { get }
}

/// Whether an error that ended a body is one to keep: not the `CancellationError` that the
/// generator's own cancellation made its `yield` throw.
func isWorthKeeping(_ error: any Error, cancelled: Bool) -> Bool {
  !(cancelled && error is CancellationError)
}
