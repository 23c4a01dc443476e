import Glibc
import Synchronization

/// The threads' caches in front of the pool's mutex (see `StackCache`). Under `mutex` unless
/// said otherwise.
extension StackPool {
  /// Binds `cache` (the calling thread's) to `size` and puts `fiber` in it, if the cache holds
  /// no fiber and the size's ready list and caches have room for one more; false otherwise.
  /// Under `mutex`. A cache bound to another size leaves it first.
  func bind(
    _ cache: Unmanaged<StackCache>, to size: Int, in sizeClass: SizeClass,
    keeping fiber: OpaquePointer
  ) -> Bool {
    cache._withUnsafeGuaranteedRef { cache -> Bool in
      let word = cache.word.load(ordering: .relaxed)
      guard word <= StackCache.empty else { return false }  // holds a fiber: leave it be
      if word == StackCache.empty, cache.size != size {
        // Its own thread is the caller, and the mutex keeps trimmers out: nothing changes it.
        cache.word.store(StackCache.unbound, ordering: .relaxed)
        classes[cache.size]?.caches -= 1
      } else if word == StackCache.empty {
        sizeClass.caches -= 1  // bound to this size already: rebound below
      }
      guard sizeClass.ready.count + sizeClass.caches < CoroutineStack.poolCapacity else {
        cache.word.store(StackCache.unbound, ordering: .relaxed)
        return false
      }
      if !cache.isListed {
        cache.isListed = true
        caches.append(Unmanaged.passRetained(cache))
      }
      sizeClass.caches += 1
      cache.size = size
      // Still counted in use (see `cachedCount`); the thread's next take finds it.
      cache.word.store(UInt(bitPattern: Int(bitPattern: fiber)), ordering: .releasing)
      return true
    }
  }

  /// Unbinds every thread's cache bound to `sizeClass`'s size, moving any fiber it holds to
  /// the ready list (the caller trims it). Under `mutex`; their threads then find their caches
  /// unbound and come here to bind them again.
  func unbindCaches(of sizeClass: SizeClass, size: Int) {
    for cache in caches {
      cache._withUnsafeGuaranteedRef { cache in
        guard cache.size == size else { return }
        let word = cache.word.exchange(StackCache.unbound, ordering: .acquiringAndReleasing)
        guard word != StackCache.unbound else { return }
        sizeClass.caches -= 1
        if word != StackCache.empty {
          sizeClass.inUse -= 1
          pooledTotal += 1
          sizeClass.ready.append(OpaquePointer(bitPattern: word)!)
        }
      }
    }
  }

  /// A thread that exits gives back what its cache holds and leaves the list.
  fileprivate func forget(_ cache: Unmanaged<StackCache>) {
    mutex.withLock { _ in
      if let index = caches.firstIndex(where: { $0.toOpaque() == cache.toOpaque() }) {
        caches.remove(at: index).release()  // the list's reference
      }
      cache._withUnsafeGuaranteedRef { cache in
        let word = cache.word.exchange(StackCache.unbound, ordering: .acquiringAndReleasing)
        guard word != StackCache.unbound, let sizeClass = classes[cache.size] else { return }
        sizeClass.caches -= 1
        guard word != StackCache.empty else { return }
        pool(OpaquePointer(bitPattern: word)!, in: sizeClass)
      }
    }
    cache.release()  // the thread's reference
  }

  /// Fibers of `size` (nil: of any size) held by threads' caches: finished, so pooled,
  /// although `inUse` counts them (a thread moves them in and out without the mutex). Under
  /// `mutex`; exact once the threads using the size are quiet.
  func cachedCount(size: Int? = nil) -> Int {
    caches.reduce(0) { count, cache in
      cache._withUnsafeGuaranteedRef {
        (size == nil || $0.size == size) && $0.word.load(ordering: .acquiring) > StackCache.empty
          ? count + 1 : count
      }
    }
  }

  /// Fibers of one size in threads' caches (for tests).
  func cachedFiberCount(size: Int) -> Int { mutex.withLock { _ in cachedCount(size: size) } }
}

/// One thread's cache of one finished fiber, in front of the pool's mutex: a coroutine that
/// finishes on a thread and the next one started there swap its stack with one
/// compare-and-swap each, instead of taking and dropping the mutex twice (four locked
/// instructions, and the pool's bookkeeping).
///
/// Only its own thread puts a fiber in or takes one out, and binds it to a size (under the
/// pool's mutex). Another thread, holding the mutex, may only unbind it (trimming the pool),
/// emptying it in one exchange: the owner's next compare-and-swap then fails and it goes to the
/// pool. A cached fiber stays counted in its size class's `inUse` (its thread moves it without
/// the mutex) and the counts read the caches to report it as pooled. The caches bound to a size
/// count against its ready list's room, so the ready list and the caches together still hold at
/// most ``CoroutineStack/poolCapacity`` finished stacks of a size.
final class StackCache: @unchecked Sendable {  // `word` is atomic; `size` see below
  /// `unbound`, `empty` (bound to `size`), or the address of a cached fiber of `size`.
  let word = Atomic<UInt>(StackCache.unbound)
  /// The size it is bound to: written by its own thread under the pool's mutex, read by that
  /// thread and by others under the mutex.
  @exclusivity(unchecked) var size = 0
  /// In the pool's list (under the pool's mutex).
  @exclusivity(unchecked) var isListed = false

  static let unbound: UInt = 0
  static let empty: UInt = 1

  /// The cached fiber if the cache is bound to `size` and holds one. Its own thread only.
  @inline(__always)
  func take(size: Int) -> OpaquePointer? {
    guard self.size == size else { return nil }
    let fiber = word.load(ordering: .relaxed)
    guard fiber > Self.empty,
      word.compareExchange(expected: fiber, desired: Self.empty, ordering: .acquiring).exchanged
    else { return nil }
    return OpaquePointer(bitPattern: fiber)
  }

  /// Keeps `fiber` if the cache is bound to `size` and empty. Its own thread only.
  @inline(__always)
  func give(_ fiber: OpaquePointer, size: Int) -> Bool {
    guard self.size == size else { return false }
    return word.compareExchange(
      expected: Self.empty, desired: UInt(bitPattern: Int(bitPattern: fiber)), ordering: .releasing
    ).exchanged
  }

  /// The calling thread's cache, if it has one (unretained: the thread holds it until it exits).
  @inline(__always)
  static func current(_ key: pthread_key_t) -> Unmanaged<StackCache>? {
    pthread_getspecific(key).map { Unmanaged<StackCache>.fromOpaque($0) }
  }

  /// Gives the calling thread a cache (it has none yet).
  static func makeCurrent(_ key: pthread_key_t) -> Unmanaged<StackCache> {
    let cache = Unmanaged.passRetained(StackCache())
    pthread_setspecific(key, cache.toOpaque())
    return cache
  }

  /// The key of the threads' caches; when a thread exits, its cache's fiber goes back to the
  /// pool.
  static func makeKey() -> pthread_key_t {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
      guard let raw else { return }
      StackPool.shared.forget(Unmanaged<StackCache>.fromOpaque(raw))
    }
    coPrecondition(status == 0, "StackPool: pthread_key_create failed (\(status))")
    return key
  }
}
