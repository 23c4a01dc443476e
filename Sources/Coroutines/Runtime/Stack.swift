import CUContext
import Dispatch
import Glibc
import Synchronization

/// Stack sizes and the pool that recycles stacks.
///
/// Every coroutine runs on its own `mmap`ed stack. Below each stack lies a guard region of
/// ``guardSize`` bytes that faults on any access, so an overflow faults instead of overwriting a
/// neighbour: Swift emits no stack probes and one frame can be 20 KiB, which would jump a single
/// guard page. Pages are committed only when touched, so a generous size costs address space,
/// not memory.
///
/// - ``minimumSize``: 64 KiB. The first string interpolation of an error alone used 41 KiB in a
///   debug build, so smaller stacks are refused.
/// - ``defaultSize``: 256 KiB unless changed; set it once at start-up, or pass `stackSize:` to
///   ``co_launch(on:name:stackSize:_:)`` for one coroutine.
/// - Stacks are mapped 64 at a time. On Linux 6.13 and later the guards are guard markers, which
///   do not split a mapping, so 64 stacks cost one kernel memory mapping and memory is the only
///   limit. On older kernels each guard is an `mprotect`ed region and each stack costs two
///   mappings, so the default `vm.max_map_count` of 65 530 stops dedicated stacks near 32 700
///   live coroutines. Out of memory or past that limit, launching fails cleanly: the task is
///   rejected with ``CoroutineError/stackAllocationFailed(size:errno:)``.
public enum CoroutineStack {
  /// The smallest stack a coroutine may ask for, in bytes.
  public static let minimumSize = 64 * 1024

  /// The largest stack a coroutine may ask for, in bytes (1 GiB).
  public static let maximumSize = 1 << 30

  /// The guard region below every stack, in bytes: larger than any plausible frame.
  public static let guardSize = 64 * 1024

  private static let defaultSizeStorage = Atomic<Int>(256 * 1024)
  private static let poolCapacityStorage = Atomic<Int>(64)

  /// The stack size of coroutines launched without `stackSize:`, in bytes (256 KiB at start).
  ///
  /// Setting a value outside ``minimumSize`` ... ``maximumSize`` stops the program with a
  /// message naming the value.
  public static var defaultSize: Int {
    get { defaultSizeStorage.load(ordering: .relaxed) }
    set {
      validate(newValue, in: "CoroutineStack.defaultSize")
      defaultSizeStorage.store(newValue, ordering: .relaxed)
    }
  }

  /// How many finished stacks of each size the pool keeps ready for reuse (64 at start).
  ///
  /// Stacks finished beyond this stay idle for a while, holding their memory, so that a load
  /// that comes back soon finds them resident. Those that then stay unused through a whole
  /// second go back to the system: a burst's stacks go back within about two seconds of its
  /// end, in one batch (with their slabs, when whole slabs empty). All of them count as pooled.
  /// ``drainPool()`` gives every pooled stack back at once.
  public static var poolCapacity: Int {
    get { poolCapacityStorage.load(ordering: .relaxed) }
    set {
      coPrecondition(newValue >= 0, "CoroutineStack.poolCapacity: \(newValue) is negative")
      poolCapacityStorage.store(newValue, ordering: .relaxed)
      StackPool.shared.trim(toPerSize: newValue)
    }
  }

  /// Unmaps every pooled stack. Stacks of running or suspended coroutines are untouched.
  public static func drainPool() { StackPool.shared.trim(toPerSize: 0) }

  @usableFromInline  // called from the inlinable co_launch
  static func validate(_ size: Int, in call: String) {
    coPrecondition(
      size >= minimumSize,
      "\(call): stack size \(size) is below the minimum of \(minimumSize) bytes")
    coPrecondition(
      size <= maximumSize,
      "\(call): stack size \(size) is above the maximum of \(maximumSize) bytes")
  }
}

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

  private let mutex = Mutex<Void>(())
  // Unchecked: only ever touched inside `mutex`, by code that calls nothing that could reach
  // them again; the dynamic exclusivity checks cost more than the rest of a pooled take.
  @exclusivity(unchecked) private var classes: [Int: SizeClass] = [:]
  @exclusivity(unchecked) private var lastSize = 0
  /// Unretained: `classes` keeps every size class for the pool's lifetime, so handing the last
  /// one out costs no retain and release (two pairs per launch before).
  @exclusivity(unchecked) private var lastClass: Unmanaged<SizeClass>?
  @exclusivity(unchecked) private var pooledTotal = 0
  @exclusivity(unchecked) private var mappedTotal = 0
  /// Each thread's `StackCache`; a field rather than a static, whose every read went through
  /// `swift_once`.
  private let cacheKey = StackCache.makeKey()
  /// Every thread's cache that was ever bound (retained; a thread that exits takes its own out).
  @exclusivity(unchecked) private var caches: [Unmanaged<StackCache>] = []

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
  private func pool(_ fiber: OpaquePointer, in sizeClass: SizeClass) {
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

  // MARK: Thread caches

  /// Binds `cache` (the calling thread's) to `size` and puts `fiber` in it, if the cache holds
  /// no fiber and the size's ready list and caches have room for one more; false otherwise.
  /// Under `mutex`. A cache bound to another size leaves it first.
  private func bind(
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
  private func unbindCaches(of sizeClass: SizeClass, size: Int) {
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
  private func cachedCount(size: Int? = nil) -> Int {
    caches.reduce(0) { count, cache in
      cache._withUnsafeGuaranteedRef {
        (size == nil || $0.size == size) && $0.word.load(ordering: .acquiring) > StackCache.empty
          ? count + 1 : count
      }
    }
  }

  /// Fibers of one size in threads' caches (for tests).
  func cachedFiberCount(size: Int) -> Int { mutex.withLock { _ in cachedCount(size: size) } }

  /// Moves a pooled fiber out of the ready list's reach into its slab, which it keeps mapped
  /// (an idle fiber still occupies its slot) and offers to `take`. Under `mutex`.
  private func makeIdle(_ fiber: OpaquePointer, in sizeClass: SizeClass) {
    let slab = sizeClass.slabs[UInt(bitPattern: cu_fiber_slab(fiber))]!
    slab.idle.append(fiber)
    sizeClass.idleCount += 1
    open(slab, in: sizeClass)
  }

  /// Makes sure `slab` is offered to `take`. Under `mutex`.
  private func open(_ slab: Slab, in sizeClass: SizeClass) {
    if !slab.isOpen {
      slab.isOpen = true
      sizeClass.open.append(slab)
    }
  }

  /// One occupant of `slab` has left: forgets the slab and returns it if it is now empty, else
  /// makes sure it is offered to `take`. Under `mutex`.
  private func vacate(_ slab: Slab, in sizeClass: SizeClass) -> Slab? {
    slab.occupied -= 1
    if slab.occupied == 0 {
      forgetEmpty(slab, in: sizeClass)
      return slab
    }
    open(slab, in: sizeClass)
    return nil
  }

  /// Forgets an empty slab, for the caller to unmap once the mutex is dropped. Under `mutex`.
  private func forgetEmpty(_ slab: Slab, in sizeClass: SizeClass) {
    sizeClass.slabs[slab.key] = nil
    slab.isFreed = true
  }

  /// Gives the memory of `count` idle fibers of `sizeClass` back (all of them by default);
  /// returns the slabs this left empty, for the caller to unmap once the mutex is dropped.
  ///
  /// The slabs with the fewest other occupants go first, so that whole slabs empty and are
  /// unmapped. The other fibers are advised away together, one system call per run of
  /// neighbouring slots: each call makes every thread of the process flush its TLB, so one per
  /// stack cost a group's loops more than the rest of their stack handling. Under `mutex`: a
  /// released slot must not be rebuilt before its pages are gone.
  private func releaseIdle(in sizeClass: SizeClass, count: Int = .max) -> [Slab] {
    var left = min(count, sizeClass.idleCount)
    guard left > 0 else { return [] }
    let slabs = sizeClass.slabs.values.filter { !$0.idle.isEmpty }.sorted {
      $0.occupied - $0.idle.count < $1.occupied - $1.idle.count
    }
    var fibers: [OpaquePointer] = []
    var emptied: [Slab] = []
    for slab in slabs where left > 0 {
      let taken = min(left, slab.idle.count)
      left -= taken
      sizeClass.idleCount -= taken
      pooledTotal -= taken
      mappedTotal -= taken
      slab.occupied -= taken
      if slab.occupied == 0 {
        slab.idle.removeAll()
        forgetEmpty(slab, in: sizeClass)
        emptied.append(slab)
        continue
      }
      for _ in 0..<taken {
        let fiber = slab.idle.removeLast()
        fibers.append(fiber)
        slab.released.append(Int(cu_fiber_slot(fiber)))
      }
    }
    if !fibers.isEmpty {
      fibers.withUnsafeBufferPointer { cu_stack_release_fibers($0.baseAddress!, $0.count) }
    }
    return emptied
  }

  // MARK: Idle stacks

  /// Whether a look at the idle stacks is scheduled (see `scheduleDecayCheck`). Under `mutex`.
  @exclusivity(unchecked) private var decayCheckScheduled = false

  /// Makes sure the pool looks at its idle stacks when the first of their intervals ends (see
  /// `IdleStackDecay`), on a Dispatch thread: the memory goes back even if no coroutine ever
  /// starts or finishes again. Under `mutex`.
  private func scheduleDecayCheck() {
    guard !decayCheckScheduled,
      let deadline = classes.values.compactMap({ $0.decay.deadline }).min()
    else { return }
    decayCheckScheduled = true
    let delay = deadline &- min(deadline, monotonicNanoseconds())
    DispatchQueue.global(qos: .utility).asyncAfter(
      deadline: .now() + .nanoseconds(Int(clamping: delay))
    ) { self.releaseUnusedIdleStacks() }
  }

  /// Gives back the memory of the idle stacks that stayed unused through a whole interval, and
  /// looks again at the next interval's end while some stay idle.
  private func releaseUnusedIdleStacks() {
    let empty = mutex.withLock { _ -> [Slab] in
      decayCheckScheduled = false
      let now = monotonicNanoseconds()
      let empty = classes.values.flatMap { releaseUnused(in: $0, at: now) }
      scheduleDecayCheck()
      return empty
    }
    empty.forEach { cu_stack_slab_free($0.pointer) }
  }

  /// The idle stacks of `sizeClass` found unused at `now`, released. Under `mutex`.
  private func releaseUnused(in sizeClass: SizeClass, at now: UInt64) -> [Slab] {
    guard
      let unused = sizeClass.decay.release(
        now: now, idle: sizeClass.idleCount, capacity: CoroutineStack.poolCapacity),
      unused > 0
    else { return [] }
    return releaseIdle(in: sizeClass, count: unused)
  }

  /// The look at the idle stacks of one size, as if made at `now` (for tests, which cannot wait
  /// for the real one).
  func releaseUnusedIdleStacks(size: Int, at now: UInt64) {
    let empty = mutex.withLock { _ -> [Slab] in
      classes[size].map { releaseUnused(in: $0, at: now) } ?? []
    }
    empty.forEach { cu_stack_slab_free($0.pointer) }
  }

  /// When the current interval of the idle stacks of `size` ends, if one runs (for tests).
  func idleIntervalDeadline(size: Int) -> UInt64? {
    mutex.withLock { _ in classes[size]?.decay.deadline }
  }

  /// Keeps at most `limit` finished fibers of each size; the memory of the others goes back to
  /// the system (their slabs are unmapped once empty). Threads' caches are emptied and unbound
  /// (they bind again, within `poolCapacity`, when their threads next give a fiber back).
  func trim(toPerSize limit: Int) {
    let empty = mutex.withLock { _ -> [Slab] in
      var empty: [Slab] = []
      for (size, sizeClass) in classes { trim(sizeClass, size: size, to: limit, freeing: &empty) }
      return empty
    }
    empty.forEach { cu_stack_slab_free($0.pointer) }
  }

  /// Trims the pooled stacks of one size only (for tests, which run in parallel: trimming every
  /// size would move the counts another test is reading for its own size).
  func trim(size: Int, to limit: Int) {
    let empty = mutex.withLock { _ -> [Slab] in
      var empty: [Slab] = []
      if let sizeClass = classes[size] { trim(sizeClass, size: size, to: limit, freeing: &empty) }
      return empty
    }
    empty.forEach { cu_stack_slab_free($0.pointer) }
  }

  /// Under `mutex`: keeps at most `limit` pooled stacks of `sizeClass`, collecting the slabs
  /// left empty, to be unmapped once the mutex is dropped.
  private func trim(
    _ sizeClass: SizeClass, size: Int, to limit: Int, freeing empty: inout [Slab]
  ) {
    unbindCaches(of: sizeClass, size: size)
    while sizeClass.ready.count > limit, let fiber = sizeClass.ready.popLast() {
      makeIdle(fiber, in: sizeClass)
    }
    if sizeClass.idleCount + sizeClass.ready.count > limit {
      empty += releaseIdle(in: sizeClass)
      sizeClass.decay.reset()
    }
  }

  /// The size class of `size`, created on first use. Under `mutex`. Most programs use one
  /// size, so the last one found is kept at hand: hashing the size was a tenth of a pooled take.
  @inline(__always)
  private func sizeClass(_ size: Int) -> Unmanaged<SizeClass> {
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
private final class SizeClass: @unchecked Sendable {  // touched only under the pool's mutex
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

/// One slab's slots as the pool sees them. Touched only under the pool's mutex (unchecked
/// fields, as for `SizeClass`).
private final class Slab: @unchecked Sendable {  // touched only under the pool's mutex
  let pointer: OpaquePointer
  let count: Int
  /// Slots in use, in the ready list or idle; the slab is unmapped when this reaches 0.
  @exclusivity(unchecked) var occupied = 0
  /// Slots from here on have never been used.
  @exclusivity(unchecked) var nextFresh = 0
  /// Free slots whose memory was given back: their fiber must be built again.
  @exclusivity(unchecked) var released: [Int] = []
  /// Free fibers still holding their memory, not in the ready list.
  @exclusivity(unchecked) var idle: [OpaquePointer] = []
  @exclusivity(unchecked) var isOpen = false
  @exclusivity(unchecked) var isFreed = false

  init(_ pointer: OpaquePointer) {
    self.pointer = pointer
    self.count = cu_stack_slab_count(pointer)
  }

  var key: UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(pointer))) }
}

/// A stack of fibers in raw storage: pushing and popping cost a few instructions, where an
/// array in a class's field paid a uniqueness check and an unspecialised call for each (about
/// 50 instructions per launch). Noncopyable, because it owns its storage.
struct FiberList: ~Copyable {
  private var storage: UnsafeMutablePointer<OpaquePointer>?
  private var capacity = 0
  private(set) var count = 0

  init() {}

  deinit { storage?.deallocate() }

  mutating func append(_ fiber: OpaquePointer) {
    if count == capacity { grow() }
    storage![count] = fiber
    count += 1
  }

  mutating func popLast() -> OpaquePointer? {
    guard count > 0 else { return nil }
    count -= 1
    return storage![count]
  }

  private mutating func grow() {
    let bigger = UnsafeMutablePointer<OpaquePointer>.allocate(capacity: max(16, capacity * 2))
    if let storage {
      bigger.moveInitialize(from: storage, count: count)
      storage.deallocate()
    }
    storage = bigger
    capacity = max(16, capacity * 2)
  }
}
