/// A readers-writer lock for coroutines: any number of readers at once, or one writer alone.
/// Waiting suspends the coroutine, never the thread.
///
/// ```swift
/// final class Settings: @unchecked Sendable {  // `values` only under `lock`
///   let lock = CoRWLock()
///   var values = ["theme": "dark"]
/// }
///
/// let settings = Settings()
/// try CoroutineLoop.run {
///   co_launch { try settings.lock.withWriteLock { settings.values["theme"] = "light" } }
///   co_launch { _ = try settings.lock.withReadLock { settings.values["theme"] } }
/// }
/// ```
///
/// Waiters are served in the order they came: once a writer waits, readers that come after it
/// wait behind it, so a stream of readers cannot starve a writer, and the readers queued
/// together behind a writer go in together when it is done. A waiter that times out or is
/// cancelled leaves the queue and takes nothing with it.
public final class CoRWLock: Sendable {
  /// A reader takes one permit, a writer all of them.
  private let permits = SyncPermits(Int.max, reason: .readLock)

  /// Creates an unlocked readers-writer lock.
  public init() {}

  /// Runs `body` holding the lock for reading, shared with other readers.
  ///
  /// - Parameters:
  ///   - timeout: Seconds to wait for the lock at most; nil waits for as long as it takes.
  ///   - body: The reading code; it may suspend, and other readers may run meanwhile.
  /// - Returns: What `body` returns.
  /// - Throws: ``CoroutineError/timedOut`` past `timeout`, `CancellationError` if the coroutine
  ///   is cancelled while it waits, ``CoroutineError/notInCoroutine`` outside a coroutine; and
  ///   what `body` throws.
  public func withReadLock<R>(timeout: Double? = nil, _ body: () throws -> R) throws -> R {
    try acquire(1, timeout: timeout)
    defer { permits.release(1, in: "CoRWLock.withReadLock(_:)") }
    return try body()
  }

  /// Runs `body` holding the lock for writing, alone.
  ///
  /// - Parameters:
  ///   - timeout: Seconds to wait for the lock at most; nil waits for as long as it takes.
  ///   - body: The writing code; it may suspend, and no reader or writer runs meanwhile.
  /// - Returns: What `body` returns.
  /// - Throws: As ``withReadLock(timeout:_:)``.
  public func withWriteLock<R>(timeout: Double? = nil, _ body: () throws -> R) throws -> R {
    try acquire(Int.max, timeout: timeout)
    defer { permits.release(Int.max, in: "CoRWLock.withWriteLock(_:)") }
    return try body()
  }

  private func acquire(_ weight: Int, timeout: Double?) throws {
    let running = try Coroutine.requireCurrentUnretained()
    if permits.tryAcquire(weight) { return }
    try running._withUnsafeGuaranteedRef {
      try permits.acquireWaiting(weight, by: $0, timeout: timeout)
    }
  }
}
