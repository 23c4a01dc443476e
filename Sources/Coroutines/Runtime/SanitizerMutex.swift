#if COROUTINES_TSAN
  import Glibc

  /// Stands in for `Synchronization.Mutex` in ThreadSanitizer builds only (`make sanitize`
  /// passes `-DCOROUTINES_TSAN`); a declaration in this module shadows the imported one.
  ///
  /// Why: on Linux, `Synchronization.Mutex` parks on a futex inside a library that is not
  /// instrumented, so TSan never sees the lock and reports every access it guards as a race
  /// (measured with Swift 6.3.1 on a probe without any coroutine). A pthread mutex is
  /// intercepted by TSan, so reports under this one are real.
  ///
  /// The value lives behind a pointer rather than in a stored property: Swift reports its own
  /// access to a zero-sized property (`Mutex<Void>`) at the object's address, which TSan then
  /// confuses with the unlocked read of the object's header.
  @usableFromInline
  package final class Mutex<Value: ~Copyable>: @unchecked Sendable {  // `value` only under `mutex`
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)

    @usableFromInline
    package init(_ initialValue: consuming sending Value) {
      value.initialize(to: initialValue)
      pthread_mutex_init(mutex, nil)
    }

    deinit {
      pthread_mutex_destroy(mutex)
      mutex.deallocate()
      value.deinitialize(count: 1)
      value.deallocate()
    }

    @usableFromInline
    package func withLock<Result: ~Copyable, E: Error>(
      _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
      pthread_mutex_lock(mutex)
      defer { pthread_mutex_unlock(mutex) }
      return try body(&value.pointee)
    }

    @usableFromInline
    package func withLockIfAvailable<Result: ~Copyable, E: Error>(
      _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
      guard pthread_mutex_trylock(mutex) == 0 else { return nil }
      defer { pthread_mutex_unlock(mutex) }
      return try body(&value.pointee)
    }
  }
#endif
