import CUContext
import Glibc
import Synchronization

/// A process-wide pool of fibers (a stack plus its saved context), keyed by stack size.
///
/// Stacks are mapped in slabs (see stack.c): one `mmap` for up to ``slotsPerSlab(size:)`` stacks
/// and one `munmap` when the last of them is given back, because mapping, guarding and unmapping
/// each stack alone cost more than everything else a launch does. A finished stack goes to the
/// `ready` list while it has fewer than ``CoroutineStack/poolCapacity`` entries; beyond that it
/// sits idle in its slab, still resident, until `IdleStackDecay` finds it unused for a whole
/// interval and its memory goes back to the system (with its slab, when that empties). All of
/// them count as pooled.
final class StackPool: @unchecked Sendable {  // all mutable state is behind `mutex`
  static let shared = StackPool()

  let mutex = Mutex<Void>(())
  // Unchecked: only ever touched inside `mutex`, by code that calls nothing that could reach
  // them again; the dynamic exclusivity checks cost more than the rest of a pooled take.
  @exclusivity(unchecked) var classes: [Int: SizeClass] = [:]
  @exclusivity(unchecked) private var lastSize = 0
  /// Unretained: `classes` keeps every size class for the pool's lifetime, so handing the last
  /// one out costs no retain and release (two pairs per launch before).
  @exclusivity(unchecked) private var lastClass: Unmanaged<SizeClass>?
  @exclusivity(unchecked) var pooledTotal = 0
  @exclusivity(unchecked) var mappedTotal = 0
  /// Each thread's `StackCache`; a field rather than a static, whose every read went through
  /// `swift_once`.
  private let cacheKey = StackCache.makeKey()
  /// Every thread's cache that was ever bound (retained; a thread that exits takes its own out).
  @exclusivity(unchecked) var caches: [Unmanaged<StackCache>] = []
  /// Whether a look at the idle stacks is scheduled (see `scheduleDecayCheck`). Under `mutex`.
  @exclusivity(unchecked) var decayCheckScheduled = false

  /// How many stacks of `size` usable bytes one slab holds: up to 64, in at most 64 MiB of
  /// address space (pages are committed only when touched, so this costs no memory).
  static func slotsPerSlab(size: Int) -> Int {
    let slot = size + CoroutineStack.guardSize + Int(cu_page_size())
    return max(1, min(64, (64 << 20) / slot))
  }

  /// What `take` found under the lock.
  private enum Found {
    case fiber(OpaquePointer)
    case slot(Slab, Int)
    case none(SizeClass)
  }

  /// A fiber with at least `size` usable bytes of stack: the one the calling thread's cache
  /// holds (no lock), else from the pool or freshly mapped.
  @inline(__always)
  func take(size: Int) throws(CoroutineError) -> OpaquePointer {
    if let cache = StackCache.current(cacheKey),
      let fiber = cache._withUnsafeGuaranteedRef({ $0.take(size: size) })
    {
      return fiber
    }
    return try takeFromPool(size: size)
  }

  /// `take` past the thread's cache, under the mutex.
  @inline(never)
  private func takeFromPool(size: Int) throws(CoroutineError) -> OpaquePointer {
    let found = mutex.withLock { _ -> Found in
      sizeClass(size)._withUnsafeGuaranteedRef { sizeClass -> Found in
        if let fiber = sizeClass.ready.popLast() {
          sizeClass.inUse += 1
          pooledTotal -= 1
          return .fiber(fiber)
        }
        return takeSlot(in: sizeClass)
      }
    }
    switch found {
    case .fiber(let fiber):
      return fiber
    case .slot(let slab, let index):
      return try build(slab, index, size: size)
    case .none(let sizeClass):
      guard
        let pointer = cu_stack_slab_new(
          size, CoroutineStack.guardSize, Self.slotsPerSlab(size: size))
      else {
        throw .stackAllocationFailed(size: size, errno: errno)
      }
      let slab = Slab(pointer)
      let index = mutex.withLock { _ -> Int in
        sizeClass.slabs[slab.key] = slab
        sizeClass.open.append(slab)
        slab.isOpen = true
        return takeFree(from: slab, in: sizeClass)!.index
      }
      return try build(slab, index, size: size)
    }
  }

  /// A free slot of `sizeClass`: an idle fiber, else a slot to build a fiber in. Under `mutex`.
  private func takeSlot(in sizeClass: SizeClass) -> Found {
    while let slab = sizeClass.open.last {
      if let free = takeFree(from: slab, in: sizeClass) {
        if let fiber = free.fiber { return .fiber(fiber) }
        return .slot(slab, free.index)
      }
      slab.isOpen = false
      sizeClass.open.removeLast()
    }
    return .none(sizeClass)
  }

  /// Takes a free slot of `slab` for a coroutine, or nil if it has none. Under `mutex`.
  private func takeFree(from slab: Slab, in sizeClass: SizeClass) -> (
    fiber: OpaquePointer?, index: Int
  )? {
    guard !slab.isFreed else { return nil }
    if let fiber = slab.idle.popLast() {
      sizeClass.inUse += 1
      sizeClass.idleCount -= 1
      sizeClass.decay.idleFell(to: sizeClass.idleCount)
      pooledTotal -= 1
      return (fiber, 0)
    }
    let index: Int
    if let released = slab.released.popLast() {
      index = released
    } else if slab.nextFresh < slab.count {
      index = slab.nextFresh
      slab.nextFresh += 1
    } else {
      return nil
    }
    slab.occupied += 1
    sizeClass.inUse += 1
    mappedTotal += 1
    return (nil, index)
  }

  /// Builds the fiber of a slot taken for a coroutine; gives the slot back if its guard cannot
  /// be installed.
  private func build(_ slab: Slab, _ index: Int, size: Int) throws(CoroutineError) -> OpaquePointer
  {
    if let fiber = cu_stack_slab_fiber(slab.pointer, index) { return fiber }
    let failure = errno
    let empty = mutex.withLock { _ -> Slab? in
      let sizeClass = sizeClass(size).takeUnretainedValue()
      sizeClass.inUse -= 1
      mappedTotal -= 1
      slab.released.append(index)
      return vacate(slab, in: sizeClass)
    }
    if let empty { cu_stack_slab_free(empty.pointer) }
    throw .stackAllocationFailed(size: size, errno: failure)
  }

  /// Returns a finished fiber: to the calling thread's cache if it is bound to its size and
  /// empty (no lock); else ready for reuse while the pool has room for its size, else idle in
  /// its slab until its memory is given back (see `IdleStackDecay`).
  @inline(__always)
  func give(_ fiber: OpaquePointer, size: Int) {
    if let cache = StackCache.current(cacheKey),
      cache._withUnsafeGuaranteedRef({ $0.give(fiber, size: size) })
    {
      return
    }
    giveToPool(fiber, size: size)
  }

  /// `give` past the thread's cache, under the mutex: binds the cache to `size` and keeps the
  /// fiber there if the pool has room for it.
  @inline(never)
  private func giveToPool(_ fiber: OpaquePointer, size: Int) {
    let cache = StackCache.current(cacheKey) ?? StackCache.makeCurrent(cacheKey)
    mutex.withLock { _ in
      sizeClass(size)._withUnsafeGuaranteedRef { sizeClass in
        if bind(cache, to: size, in: sizeClass, keeping: fiber) { return }
        pool(fiber, in: sizeClass)
      }
    }
  }

  /// A fiber that was in use (or cached) goes to the ready list, or idle in its slab, where it
  /// keeps its memory until `IdleStackDecay` finds it unused. Under `mutex`.
  func pool(_ fiber: OpaquePointer, in sizeClass: SizeClass) {
    sizeClass.inUse -= 1
    pooledTotal += 1
    // The caches bound to this size count against the ready list's room: together they keep
    // at most `poolCapacity` fibers.
    if sizeClass.ready.count + sizeClass.caches < CoroutineStack.poolCapacity {
      sizeClass.ready.append(fiber)
      return
    }
    makeIdle(fiber, in: sizeClass)
    if sizeClass.decay.idleRose(
      to: sizeClass.idleCount, capacity: CoroutineStack.poolCapacity, now: monotonicNanoseconds)
    {
      scheduleDecayCheck()
    }
  }

  /// The size class of `size`, created on first use. Under `mutex`. Most programs use one
  /// size, so the last one found is kept at hand: hashing the size was a tenth of a pooled take.
  @inline(__always)
  func sizeClass(_ size: Int) -> Unmanaged<SizeClass> {
    if size == lastSize, let lastClass { return lastClass }
    return findSizeClass(size)
  }

  /// The size class of `size`, looked up (or created) and kept at hand. Under `mutex`.
  @inline(never)
  private func findSizeClass(_ size: Int) -> Unmanaged<SizeClass> {
    let found: SizeClass
    if let existing = classes[size] {
      found = existing
    } else {
      found = SizeClass()
      classes[size] = found
    }
    lastSize = size
    lastClass = Unmanaged.passUnretained(found)
    return Unmanaged.passUnretained(found)
  }

  /// Pooled fibers (ready or idle), all sizes.
  var pooledCount: Int { mutex.withLock { _ in pooledTotal + cachedCount() } }
  /// Mapped fibers (in use or pooled), all sizes.
  var mappedCount: Int { mutex.withLock { _ in mappedTotal } }
  /// Pooled fibers (ready or idle) of one size.
  func pooledCount(size: Int) -> Int {
    mutex.withLock { _ in
      classes[size].map { $0.ready.count + $0.idleCount + cachedCount(size: size) } ?? 0
    }
  }
  /// Fibers of one size in use by live coroutines (mapped and not pooled), read at one moment
  /// so that a concurrent trim cannot skew it.
  func inUseCount(size: Int) -> Int {
    mutex.withLock { _ in classes[size].map { $0.inUse - cachedCount(size: size) } ?? 0 }
  }
  /// Mapped fibers of one size (in use or pooled).
  func mappedCount(size: Int) -> Int {
    mutex.withLock { _ in classes[size].map { $0.inUse + $0.ready.count + $0.idleCount } ?? 0 }
  }
}

/// The stacks of one size. Touched only under the pool's mutex, by code that calls nothing that
/// could reach it again, so its fields skip the dynamic exclusivity checks.
final class SizeClass: @unchecked Sendable {  // touched only under the pool's mutex
  /// Finished fibers to reuse first (last in, first out: its pages are the likeliest in cache).
  @exclusivity(unchecked) var ready = FiberList()
  /// Every slab of this size with at least one occupied slot, by address.
  @exclusivity(unchecked) var slabs: [UInt: Slab] = [:]
  /// Slabs that may have a free slot (some may be full by now; `take` drops those).
  @exclusivity(unchecked) var open: [Slab] = []
  @exclusivity(unchecked) var inUse = 0
  /// Fibers idle in their slabs, holding memory until released.
  @exclusivity(unchecked) var idleCount = 0
  /// Threads' caches bound to this size (each may hold one fiber, counted in `inUse`).
  @exclusivity(unchecked) var caches = 0
  /// When the idle fibers' memory goes back to the system.
  @exclusivity(unchecked) var decay = IdleStackDecay()
}
