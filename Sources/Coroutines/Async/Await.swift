import CUContext

extension Coroutine {
  /// Suspends this coroutine until `future` settles (or cancellation ends the wait), then
  /// returns its value or throws its error. The future tells the coroutine itself, with no
  /// resumer between them (see `CoFuture.Observer.waiter`).
  @inlinable @inline(__always)
  func suspend<T>(awaiting future: CoFuture<T>) throws -> T {
    let delivered = try waitForDelivery(for: .future) { generation, slot in
      future.whenComplete(waking: self, generation: generation, into: slot)
    }
    guard let delivered else { throw CancellationError() }
    // The future's entry handed its reference to this record over with the result: released
    // here, on the coroutine's own thread, the settling thread's last touch of the record is
    // its wake-up, and the record's cache line does not go back to that thread as this one
    // resumes.
    Unmanaged.passUnretained(self).release()
    return try delivered.get()
  }
}

/// Waits for `future` to settle, suspending the coroutine (never the thread), and returns its
/// value or throws its error.
///
/// A future settled on another thread wakes the coroutine as any wait is woken. A
/// ``CoroutineLoop`` with nothing else to run, whose coroutines other threads answered quickly
/// of late, spins for a few microseconds before it sleeps, watching for the answer, so that it
/// usually reaches the coroutine without a trip through the kernel.
///
/// - Throws: The future's error; `CancellationError` at once if the coroutine is cancelled
///   while waiting; ``CoroutineError/notInCoroutine`` outside a coroutine.
@inlinable @inline(__always)
public func co_await<T>(_ future: CoFuture<T>) throws -> T {
  // Unretained, as in the callback form below.
  try Coroutine.requireCurrentUnretained()._withUnsafeGuaranteedRef { coroutine in
    if coroutine.isCancelled { throw CancellationError() }
    if let settled = future.result { return try settled.get() }
    return try coroutine.suspend(awaiting: future)
  }
}

/// Wraps a completion-handler API whose callback takes a `Result`: calls `start` with a callback
/// and suspends the coroutine until the callback is called. The callback is `@Sendable`: call
/// it from any thread. A callback called again is ignored; a callback dropped without being
/// called unwinds the coroutine with `CancellationError`, and is reported first, as a bug,
/// through the coroutine's unhandled-error handler (``CoroutineWaitAbandoned``).
///
/// ```swift
/// let data: Data = try co_await { done in
///   client.get(url) { data, error in done(Result { try unwrap(data, error) }) }
/// }
/// ```
///
/// - Throws: The error delivered to the callback; `CancellationError` if the coroutine is
///   cancelled while waiting; ``CoroutineError/notInCoroutine`` outside a coroutine.
@inlinable @inline(__always)
public func co_await<T>(_ start: (@escaping @Sendable (Result<T, any Error>) -> Void) -> Void)
  throws -> T
{
  // Unretained: whoever resumed the coroutine holds it while it runs, and its resumer while it
  // waits; a strong reference here cost a retain and a release per await.
  try Coroutine.requireCurrentUnretained()._withUnsafeGuaranteedRef { coroutine in
    try coroutine.suspend(for: .callback) { resumer in start { resumer.resume($0) } }
  }
}

/// Wraps a completion-handler API whose callback has the `(value?, error?)` shape, as many
/// Foundation and Objective-C APIs do: calls `start` with a callback and suspends the coroutine
/// until the callback is called. An error, when there is one, wins over a value; neither a value
/// nor an error throws ``CoroutineError/neitherValueNorError``. The callback is `@Sendable`:
/// call it from any thread. A callback called again is ignored; a callback dropped without
/// being called unwinds the coroutine with `CancellationError`, and is reported first, as a
/// bug, through the coroutine's unhandled-error handler (``CoroutineWaitAbandoned``).
///
/// ```swift
/// let data: Data = try co_await { done in
///   session.load(url) { data, error in done(data, error) }
/// }
/// ```
///
/// - Throws: The error delivered to the callback; ``CoroutineError/neitherValueNorError`` when
///   it delivered neither; `CancellationError` if the coroutine is cancelled while waiting;
///   ``CoroutineError/notInCoroutine`` outside a coroutine.
@_disfavoredOverload
@inlinable @inline(__always)
public func co_await<T>(_ start: (@escaping @Sendable (T?, (any Error)?) -> Void) -> Void)
  throws -> T
{
  // Disfavoured: where both shapes fit (a callback only stored or dropped, never called), the
  // `Result` form is chosen, as before this form existed, rather than an ambiguity error.
  // Unretained, as in the `Result` form above.
  try Coroutine.requireCurrentUnretained()._withUnsafeGuaranteedRef { coroutine in
    try coroutine.suspend(for: .callback) { resumer in
      start { value, error in
        if let error {
          resumer.resume(.failure(error))
        } else if let value {
          resumer.resume(.success(value))
        } else {
          resumer.resume(.failure(CoroutineError.neitherValueNorError))
        }
      }
    }
  }
}

/// Runs `work` on `scheduler` and comes back: the coroutine itself moves there, runs `work`
/// (which may suspend too) and returns to its own scheduler, even when `work` throws.
///
/// `work` is `@Sendable`, as it runs on another thread than the code that wrote it: Swift
/// checks what it captures, and work written on the main actor does not take on its isolation
/// (see "Sendable bodies" in <doc:CoroutinesSchedulersAndLoop>). Hand results back as its
/// return value.
///
/// On a ``CoroutineLoopGroup`` or one of its loops, the coroutine counts as one of the group's
/// until it leaves: a ``CoroutineLoopGroup/shutdown()`` waits for it.
///
/// A cancellation cannot stop `work` once it runs: it runs on the coroutine's own stack, and can
/// look at ``co_isActive()`` itself. When it returns, a coroutine cancelled meanwhile drops its
/// result and throws `CancellationError`, back on its own scheduler, as Kotlin's `withContext`
/// does.
///
/// - Throws: What `work` throws; `CancellationError` if the coroutine was cancelled before it
///   left or while `work` ran; ``CoroutineError/sharedStackCannotMove`` for a coroutine on a
///   shared stack (its stack belongs to its loop); ``CoroutineError/schedulerShutDown``, without
///   leaving, when `scheduler` is a group that was shut down (or one of its loops) and the
///   coroutine is not on one of the group's threads, or a loop of a group that has ended;
///   ``CoroutineError/notInCoroutine`` outside a coroutine.
public func co_await<T>(
  on scheduler: any CoroutineScheduler, _ work: @escaping @Sendable () throws -> T
) throws -> T {
  let value = try hopping(to: scheduler, work)
  if try Coroutine.requireCurrent().isCancelled { throw CancellationError() }
  return value
}

/// `co_await(on:_:)` for the library's own callers, whose `work` may capture what their caller
/// keeps using (``CoBound`` hops with an access to its value): the coroutine runs `work`
/// itself and is back before this returns, so nothing runs concurrently with the caller.
func hopping<T>(to scheduler: any CoroutineScheduler, _ work: () throws -> T) throws -> T {
  let coroutine = try Coroutine.requireCurrent()
  if coroutine.isCancelled { throw CancellationError() }
  let origin = coroutine.scheduler
  if origin === scheduler { return try work() }
  if coroutine.usesSharedStack { throw CoroutineError.sharedStackCannotMove }
  let visit = try GroupVisit(to: scheduler)
  coroutine.hop(to: scheduler)
  defer {
    visit?.leave()
    coroutine.hop(to: origin)
  }
  return try work()
}

/// A coroutine's stay on a ``CoroutineLoopGroup`` or one of its loops during `co_await(on:)`:
/// admitted before it leaves (or refused, if the group takes no more work from it), and counted
/// among the group's or the loop's coroutines until it leaves, so that the loop it waits on
/// cannot end under it and drop its wake-up. A coroutine's own loop counts it already, and any
/// other scheduler (a lone loop runs again when asked; a queue never ends) needs no visit.
enum GroupVisit {
  case group(CoroutineLoopGroup)
  case loop(CoroutineLoop)

  /// Admits a visit to `scheduler`, or nil when it needs none; throws
  /// ``CoroutineError/schedulerShutDown`` when refused.
  init?(to scheduler: any CoroutineScheduler) throws(CoroutineError) {
    if let loop = scheduler as? CoroutineLoop {
      guard loop.ready != nil else { return nil }
      try loop.admitVisitor()
      self = .loop(loop)
    } else if let group = scheduler as? CoroutineLoopGroup {
      try group.admitVisitor()
      self = .group(group)
    } else {
      return nil
    }
  }

  /// The visitor leaves, before it hops back: still on the group's thread, it counts there.
  func leave() {
    switch self {
    case .group(let group): group.visitorLeft()
    case .loop(let loop): loop.visitorLeft()
    }
  }
}

/// Suspends the coroutine for `seconds` on its scheduler's clock; never blocks the thread. A
/// delay of zero or less still lets other jobs run first. A NaN delay is a programming error
/// and stops the program with a message.
///
/// - Throws: `CancellationError` at once if the coroutine is cancelled while waiting;
///   ``CoroutineError/notInCoroutine`` outside a coroutine.
@inlinable @inline(__always)
public func co_delay(_ seconds: Double) throws {
  // False for NaN too, which the timed path stops on.
  guard seconds <= 0 else { return try delayOnClock(seconds) }
  // Nothing to wait for: just let the jobs already queued run, with no timer at all. Inlined,
  // so that the coroutine switches out from its caller's frame (see "Switching" in
  // Coroutine+Switch.swift).
  let running = try Coroutine.fiberToYieldCurrent()
  cu_fiber_suspend(running.fiber)
  if running.coroutine._withUnsafeGuaranteedRef({ $0.isCancelled }) { throw CancellationError() }
}

/// `co_delay` with a positive delay (or NaN).
@usableFromInline
func delayOnClock(_ seconds: Double) throws {
  coPrecondition(!seconds.isNaN, "co_delay(_:): the delay is NaN")
  // Unretained on the way to the loop's timer heap: a running coroutine is kept alive by
  // whoever resumed it, and with thousands of sleepers each retain was a cache miss.
  let running = try Coroutine.requireCurrentUnretained()
  let delay = nanoseconds(fromSeconds: seconds, in: "co_delay(_:)")
  if try running._withUnsafeGuaranteedRef({ try $0.sleepOnCurrentLoop(nanoseconds: delay) }) {
    return
  }
  let coroutine = running.takeUnretainedValue()
  var timer: (any CoroutineTimer)?
  defer { timer?.cancel() }
  let _: Void = try coroutine.suspend(for: .delay) { resumer in
    timer = coroutine.scheduler.schedule(after: seconds) { resumer.resume(.success(())) }
  }
}

extension Coroutine {
  /// `co_delay(0)` up to its switch: the running coroutine, unretained (whoever resumed it holds
  /// it until it switches back), and its fiber to suspend, after which the scheduler runs it
  /// again behind the jobs already queued. Inlinable, like `requireCurrentUnretained()`.
  @inlinable
  static func fiberToYieldCurrent() throws -> (
    coroutine: Unmanaged<Coroutine>, fiber: OpaquePointer
  ) {
    let running = try requireCurrentUnretained()
    return try running._withUnsafeGuaranteedRef { coroutine in
      if coroutine.isCancelled { throw CancellationError() }
      return (running, coroutine.fiberToYield())
    }
  }
}

/// True inside a coroutine that has not been cancelled; false once it is cancelled, and
/// outside any coroutine.
public func co_isActive() -> Bool {
  guard let coroutine = Coroutine.current else { return false }
  return !coroutine.isCancelled
}
