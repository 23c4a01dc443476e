import CLinux
import CUContext
import Synchronization

/// A mutual-exclusion lock for coroutines: waiting for it suspends the coroutine, never the
/// thread, so the other coroutines of that thread run on meanwhile.
///
/// ```swift
/// let mutex = CoMutex()
/// nonisolated(unsafe) var balance = 0  // every access holds mutex
/// try CoroutineLoop.run {
///   for _ in 0..<10 {
///     co_launch(on: DispatchQueue.global()) {
///       try mutex.withLock { balance += 10 }
///     }
///   }
/// }
/// // balance == 100
/// ```
///
/// - Waiters are served first come, first served: ``unlock()`` hands the mutex straight to the
///   longest waiter, so a coroutine that unlocks and locks again at once cannot starve it.
/// - A waiter that times out or is cancelled leaves the queue and takes nothing with it: if the
///   mutex was being handed to it at that moment, it goes to the next waiter.
/// - It works across schedulers and threads: a coroutine on a loop and one on a `DispatchQueue`
///   may contend for one mutex. The coroutine that locked it must unlock it.
/// - An uncontended ``lock(timeout:)`` and ``unlock()`` are one compare-and-swap each, with no
///   lock and no allocation.
///
/// Unlike `Synchronization.Mutex` and `NSLock`, it may be held across a suspension (a
/// `co_await`, a channel send), and waiting for it never blocks the thread.
public final class CoMutex: Sendable {
  @usableFromInline let permits = SyncPermits(1, reason: .mutex)
  /// Who holds the mutex (see `holderToken`), 0 when nobody does: written by the holder only,
  /// so that `unlock()` can refuse a caller that does not hold it.
  @usableFromInline let holder = Atomic<UInt>(0)

  /// Creates an unlocked mutex.
  public init() {}

  /// Locks the mutex, suspending the coroutine while another holds it.
  ///
  /// - Parameter timeout: Seconds to wait at most, on the coroutine's scheduler's clock; nil
  ///   waits for as long as it takes.
  /// - Throws: ``CoroutineError/timedOut`` past `timeout`, `CancellationError` if the coroutine
  ///   is cancelled while it waits (in both cases the mutex is not locked);
  ///   ``CoroutineError/notInCoroutine`` outside a coroutine.
  @inlinable @inline(__always)
  public func lock(timeout: Double? = nil) throws {
    let running = try Coroutine.requireCurrentUnretained()
    if !permits.tryAcquire(1) {
      try running._withUnsafeGuaranteedRef {
        try permits.acquireWaiting(1, by: $0, timeout: timeout)
      }
    }
    holder.store(UInt(bitPattern: running.toOpaque()), ordering: .relaxed)
  }

  /// Locks the mutex if it is free and nobody waits for it, without suspending. Outside a
  /// coroutine the calling thread holds it.
  ///
  /// - Returns: True if the caller now holds the mutex.
  public func tryLock() -> Bool {
    guard permits.tryAcquire(1) else { return false }
    holder.store(Self.holderToken(), ordering: .relaxed)
    return true
  }

  /// Unlocks the mutex, handing it to the longest waiter if there is one.
  ///
  /// Called by a coroutine (or thread) that does not hold the mutex, it stops the program with
  /// a message: unlocking another's lock is a bug that would let two coroutines in.
  @inlinable @inline(__always)
  public func unlock() {
    let token = Self.holderToken()
    if holder.load(ordering: .relaxed) != token { refuseUnlock() }
    holder.store(0, ordering: .relaxed)
    permits.release(1, in: "CoMutex.unlock()")
  }

  /// Runs `body` holding the mutex, and unlocks it afterwards, also when `body` throws (a
  /// cancelled coroutine's `CancellationError` included).
  ///
  /// - Throws: What ``lock(timeout:)`` throws, and what `body` throws.
  @inlinable
  public func withLock<R>(_ body: () throws -> R) throws -> R {
    try lock()
    defer { unlock() }
    return try body()
  }

  /// True if `coroutine` holds the mutex.
  func isHeld(by coroutine: Coroutine) -> Bool {
    holder.load(ordering: .relaxed)
      == UInt(bitPattern: Unmanaged.passUnretained(coroutine).toOpaque())
  }

  /// Unlocks for a condition's wait, whose coroutine was checked to hold the mutex.
  func unlockForConditionWait() {
    holder.store(0, ordering: .relaxed)
    permits.release(1, in: "CoMutex.unlock()")
  }

  /// Locks for `coroutine` whatever cancellations arrive meanwhile (a condition's wait ending).
  func lockIgnoringCancellation(by coroutine: Coroutine) {
    permits.acquireIgnoringCancellation(1, by: coroutine)
    holder.store(
      UInt(bitPattern: Unmanaged.passUnretained(coroutine).toOpaque()), ordering: .relaxed)
  }

  /// The running coroutine's address, or outside any coroutine a token of the calling thread.
  ///
  /// `cu_tls_current_coroutine()` is a call into C, so it is asked anew after every switch (a
  /// thread-local's address kept across a suspension would be the old thread's).
  @inlinable
  static func holderToken() -> UInt {
    if let pointer = cu_tls_current_coroutine() { return UInt(bitPattern: pointer) }
    return UInt(cu_tls_thread_token())
  }

  @usableFromInline @inline(never)
  func refuseUnlock() -> Never {
    let held = holder.load(ordering: .relaxed)
    let caller =
      Coroutine.current.map { "coroutine \($0.name.map { "'\($0)'" } ?? "(unnamed)")" }
      ?? "a thread outside any coroutine"
    coStop(
      held == 0
        ? "CoMutex.unlock(): the mutex is not locked (called by \(caller))"
        : "CoMutex.unlock(): \(caller) does not hold the mutex")
  }
}
