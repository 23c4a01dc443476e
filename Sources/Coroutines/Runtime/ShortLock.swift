import CLinux
import CUContext
import Glibc

/// A mutex for short critical sections, with separate `lock()` and `unlock()`, because
/// `co_select` must hold the locks of several channels at once, always taken in the same
/// (address) order. Channels, generators and the coroutine-aware locks' wait queues use it.
///
/// It is `cu_lock`, one word taken and released inline with one atomic instruction each, since
/// every channel operation and every generator hand-over takes it. ThreadSanitizer builds use a
/// pthread mutex instead, which TSan intercepts (see `SanitizerMutex`).
@usableFromInline
final class ShortLock: @unchecked Sendable {  // cu_lock (or a pthread mutex) synchronises it
  #if COROUTINES_TSAN
    @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
      pthread_mutex_destroy(mutex)
      mutex.deallocate()
    }

    @inlinable func lock() { pthread_mutex_lock(mutex) }
    @inlinable func unlock() { pthread_mutex_unlock(mutex) }
  #else
    @usableFromInline let word = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)

    init() { word.initialize(to: 0) }

    deinit { word.deallocate() }

    @inlinable func lock() { cu_lock(word) }
    @inlinable func unlock() { cu_unlock(word) }
  #endif

  @inlinable
  func withLock<R>(_ body: () throws -> R) rethrows -> R {
    lock()
    defer { unlock() }
    return try body()
  }
}
