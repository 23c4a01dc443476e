import Foundation

/// A value shared between callbacks on different threads, behind a lock.
///
/// An `NSLock` (a pthread mutex underneath) rather than `Synchronization.Mutex`: ThreadSanitizer
/// cannot see the latter on Linux and reports every access it guards as a race, and these
/// walkthroughs run under `make sanitize`.
public final class Locked<Value: Sendable>: @unchecked Sendable {
  // @unchecked: `stored` is read and written only while `lock` is held.
  private let lock = NSLock()
  private var stored: Value

  /// Wraps `value`.
  public init(_ value: Value) { stored = value }

  /// Runs `body` with exclusive access to the value.
  @discardableResult
  public func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R {
    lock.lock()
    defer { lock.unlock() }
    return body(&stored)
  }

  /// A copy of the value right now.
  public var value: Value { withLock { $0 } }
}
