import Foundation
import Synchronization

/// The identity of the calling thread. Not `pthread_self()`: glibc declares it `const`, so the
/// optimizer may reuse a value read before a coroutine moved threads. Every call here asks.
func threadID() -> ObjectIdentifier { ObjectIdentifier(Thread.current) }

/// A thread-safe list for recording what happened, in order.
final class Log: Sendable {
  private let storage = Mutex<[Int]>([])
  func append(_ value: Int) { storage.withLock { $0.append(value) } }
  var values: [Int] { storage.withLock { $0 } }
}
