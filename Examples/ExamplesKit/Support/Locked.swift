import Synchronization

/// A value shared between callbacks on different threads, behind a mutex.
///
/// `Mutex` cannot be captured by an escaping closure, so callback-style code needs a class to
/// hold it; the coroutine versions of the walkthroughs mostly do without.
public final class Locked<Value: Sendable>: Sendable {
  private let mutex: Mutex<Value>

  /// Wraps `value`.
  public init(_ value: Value) { mutex = Mutex(value) }

  /// Runs `body` with exclusive access to the value.
  @discardableResult
  public func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R {
    mutex.withLock { body(&$0) }
  }

  /// A copy of the value right now.
  public var value: Value { withLock { $0 } }
}
