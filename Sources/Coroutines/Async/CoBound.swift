/// State that belongs to one scheduler and is only ever touched there.
///
/// Wrap a value that is not thread-safe (a cache, a database handle, an object that must stay
/// on the thread that made it) and give it a serial scheduler: a serial `DispatchQueue`, a
/// ``CoroutineLoop`` or a ``CoroutineTestLoop``. Every access goes through
/// ``withValue(_:)``:
///
/// - From a coroutine on any scheduler, the coroutine hops to the value's scheduler, runs the
///   body there and hops back (``co_await(on:_:)``): no lock, and no thread waits.
/// - From plain code already on the value's scheduler (a job it runs), the body runs at once.
/// - From plain code on any other thread, the call is a bug. Debug builds stop with a message
///   that names the value, its scheduler and the calling thread; release builds skip the check.
///   Such code should use ``perform(_:)`` instead.
///
/// ```swift
/// let database = DispatchQueue(label: "database")
/// let stock = CoBound(["apples": 3], on: database, name: "stock")
/// let left = try CoroutineLoop.run {
///   try stock.withValue { stock -> Int in
///     stock["apples", default: 0] -= 1
///     return stock["apples", default: 0]
///   }
/// }
/// ```
///
/// Because a coroutine that waits for another scheduler leaves its own thread free, objects
/// that need each other while they are created cannot deadlock, however their schedulers
/// call back and forth.
///
/// The body of ``withValue(_:)`` should not suspend: while it waits, other callers may use the
/// value in between, as with actor reentrancy. The scheduler must run one job at a time (a
/// concurrent queue would run bodies in parallel). The thread check knows ``CoroutineLoop``,
/// ``CoroutineTestLoop`` and `DispatchQueue`; for other schedulers it is skipped.
public final class CoBound<Value>: @unchecked Sendable, CustomStringConvertible {
  // reason: `value` is read and written only on `scheduler`: through a hop, by a job of it, or
  // after the debug-build check in `onScheduler`.

  /// The scheduler the value belongs to.
  public let scheduler: any CoroutineScheduler
  /// The name diagnostics use.
  public let name: String
  private var value: Value

  /// Binds `value` to `scheduler`. The value is created on the caller's thread; for one that
  /// must be created on its scheduler, use ``init(on:name:making:)``.
  ///
  /// - Parameters:
  ///   - value: The state to bind.
  ///   - scheduler: Where the value lives: a serial scheduler.
  ///   - name: A name for diagnostics; the value's type when `nil`.
  public init(_ value: Value, on scheduler: any CoroutineScheduler, name: String? = nil) {
    self.value = value
    self.scheduler = scheduler
    self.name = name ?? "\(Value.self)"
    SchedulerIdentity.mark(scheduler)
  }

  /// Creates the value on `scheduler` with `make` and binds it there. From a coroutine the
  /// coroutine hops to `scheduler` to call `make` and comes back; `make` may itself use other
  /// bound values, even ones bound to the caller's scheduler.
  ///
  /// - Throws: What `make` throws; `CancellationError` if the coroutine is cancelled before it
  ///   hops.
  public convenience init(
    on scheduler: any CoroutineScheduler, name: String? = nil,
    making make: () throws -> Value
  ) throws {
    SchedulerIdentity.mark(scheduler)
    let label = name ?? "\(Value.self)"
    let value = try Self.onScheduler(scheduler, "init(on:name:making:)", label, make)
    self.init(value, on: scheduler, name: label)
  }

  /// Lets the value go on its own scheduler, so that an object that must stay on one thread
  /// also ends there. A value that holds no references has nothing to release.
  deinit {
    guard !_isPOD(Value.self), SchedulerIdentity.isCurrent(scheduler) == false else { return }
    let parcel = Parcel(value)
    scheduler.schedule { parcel.release() }
  }

  /// `CoBound<Value> "name" on` the scheduler.
  public var description: String {
    "CoBound<\(Value.self)> \"\(name)\" on \(SchedulerIdentity.describe(scheduler))"
  }

  /// Runs `body` with the value on its scheduler and returns what `body` returns.
  ///
  /// From a coroutine on another scheduler, the coroutine hops to the value's scheduler and
  /// back. From plain code, the call must already run on that scheduler; from any other thread
  /// debug builds stop with a message naming the value, its scheduler and the thread.
  ///
  /// - Throws: What `body` throws; `CancellationError` if the calling coroutine is cancelled
  ///   before it hops.
  public func withValue<R>(_ body: (inout Value) throws -> R) throws -> R {
    try Self.onScheduler(scheduler, "withValue(_:)", name) { try body(&value) }
  }

  /// Runs `body` with the value on its scheduler, from any thread and without waiting; the
  /// returned future settles with what `body` returns or throws. `body` always runs as a job
  /// of the scheduler, never inline.
  @discardableResult
  public func perform<R>(_ body: @escaping @Sendable (inout Value) throws -> R) -> CoFuture<R> {
    let promise = CoPromise<R>()
    scheduler.schedule { promise.resolve(Result { try body(&self.value) }) }
    return promise
  }

  /// Runs `work` on `scheduler`: by hopping from a coroutine, or directly from plain code that
  /// is already there; plain code elsewhere stops debug builds.
  private static func onScheduler<R>(
    _ scheduler: any CoroutineScheduler, _ call: StaticString, _ name: String,
    _ work: () throws -> R
  ) throws -> R {
    if Coroutine.current != nil {
      return try hopping(to: scheduler, work)
    }
    #if DEBUG
      if SchedulerIdentity.isCurrent(scheduler) == false {
        coStop(
          "CoBound<\(Value.self)> \"\(name)\" belongs to \(SchedulerIdentity.describe(scheduler))"
            + " but \(call) was called directly on "
            + "\(SchedulerIdentity.describeCallingThread()); call it from a coroutine, which "
            + "hops there and back, or use perform(_:)")
      }
    #endif
    return try work()
  }
}

/// Carries a bound value to its scheduler to be released there.
private final class Parcel<Value>: @unchecked Sendable {
  // reason: written once here, then read and cleared only by the one job that carries it.
  private var value: Value?

  init(_ value: Value) { self.value = value }

  func release() { value = nil }
}
