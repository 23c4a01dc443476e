import Glibc

/// A plain mutex with separate `lock()` and `unlock()`, because `co_select` must hold the locks
/// of several channels at once, always taken in the same (address) order.
@usableFromInline
final class ChannelLock: @unchecked Sendable {  // a pthread mutex synchronises it
  @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

  init() {
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  @inlinable func lock() { pthread_mutex_lock(mutex) }
  @inlinable func unlock() { pthread_mutex_unlock(mutex) }

  @inlinable
  func withLock<R>(_ body: () throws -> R) rethrows -> R {
    lock()
    defer { unlock() }
    return try body()
  }
}
