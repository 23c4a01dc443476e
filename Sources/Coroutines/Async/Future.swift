import Synchronization

/// A value that arrives later: pending until settled, then settled exactly once.
///
/// Futures follow the Promise/A+ rules: later settles are ignored; observers added after
/// settling still fire; each observer fires exactly once. Any thread may settle, observe or
/// await. Create one with ``CoPromise`` or ``co_launch(on:name:stackSize:_:)``.
public class CoFuture<T>: @unchecked Sendable {  // `outcome` and `observers` are behind `mutex`
  private let mutex = Mutex<Void>(())
  private var outcome: Result<T, any Error>?
  private var observers = Observers()
  /// Whether anyone has looked at the outcome (see ``CoUnhandledErrors``).
  private var observed = false

  init() {}

  /// The outcome once settled; `nil` while pending. Reading it counts as observing the future.
  public var result: Result<T, any Error>? {
    mutex.withLock { _ in
      observed = true
      return outcome
    }
  }

  /// True once the future has settled. Asking does not count as observing the outcome.
  public var isSettled: Bool { peek != nil }

  /// Calls `callback` once with the outcome: on the thread that settles the future, right after
  /// it settles, or at once on this thread if it already has. Counts as observing the future.
  public func whenComplete(_ callback: @escaping (Result<T, any Error>) -> Void) {
    observe(callback, marking: true)
  }

  /// Like ``whenComplete(_:)``, for the runtime's own bookkeeping (scopes, parents), which must
  /// not make an error count as handled.
  func whenSettled(_ callback: @escaping (Result<T, any Error>) -> Void) {
    observe(callback, marking: false)
  }

  /// The outcome, without counting as an observation.
  var peek: Result<T, any Error>? { mutex.withLock { _ in outcome } }

  /// True once someone awaited, observed or read the outcome.
  var wasObserved: Bool { mutex.withLock { _ in observed } }

  private func observe(_ callback: @escaping (Result<T, any Error>) -> Void, marking: Bool) {
    let settled = mutex.withLock { _ -> Result<T, any Error>? in
      if marking { observed = true }
      if let outcome { return outcome }
      observers.append(callback)
      return nil
    }
    if let settled { callback(settled) }
  }

  /// Rejects a pending future with `CancellationError`; does nothing once settled.
  public func cancel() {
    settle(.failure(CancellationError()))
  }

  /// Waits for the outcome inside a coroutine; see `co_await(_:)`.
  public func await() throws -> T {
    try co_await(self)
  }

  /// Settles the future if it is pending; returns false when it had already settled.
  @discardableResult
  @usableFromInline  // called from the inlinable co_launch
  func settle(_ result: Result<T, any Error>) -> Bool {
    let toNotify = mutex.withLock { _ -> Observers? in
      guard outcome == nil else { return nil }
      outcome = result
      return observers.takeAll()
    }
    guard let toNotify else { return false }
    toNotify.forEach { $0(result) }
    return true
  }

  /// Observers stored without an array for the common case of one.
  private struct Observers {
    typealias Callback = (Result<T, any Error>) -> Void
    private var first: Callback?
    private var rest: [Callback] = []

    mutating func append(_ callback: @escaping Callback) {
      if first == nil { first = callback } else { rest.append(callback) }
    }

    mutating func takeAll() -> Observers {
      let taken = self
      self = Observers()
      return taken
    }

    func forEach(_ body: (Callback) -> Void) {
      if let first { body(first) }
      rest.forEach(body)
    }
  }
}

/// A future that its owner settles by hand.
///
/// ```swift
/// let promise = CoPromise<Int>()
/// DispatchQueue.global().async { promise.fulfill(42) }
/// let value = try co_await(promise)
/// ```
public final class CoPromise<T>: CoFuture<T>, @unchecked Sendable {
  /// Creates a pending promise.
  public override init() {}

  /// Creates a promise and runs `body` at once with its `fulfill` and `reject`; an error thrown
  /// by `body` rejects the promise.
  public convenience init(
    _ body:
      @escaping (
        _ fulfill: @escaping (T) -> Void, _ reject: @escaping (any Error) -> Void
      ) throws -> Void
  ) {
    self.init()
    do {
      try body({ self.fulfill($0) }, { self.reject($0) })
    } catch {
      reject(error)
    }
  }

  /// Fulfills the promise with `value`; ignored once it has settled.
  public func fulfill(_ value: T) {
    settle(.success(value))
  }

  /// Rejects the promise with `error`; ignored once it has settled.
  public func reject(_ error: any Error) {
    settle(.failure(error))
  }

  /// Settles the promise with `result`; ignored once it has settled.
  public func resolve(_ result: Result<T, any Error>) {
    settle(result)
  }
}
