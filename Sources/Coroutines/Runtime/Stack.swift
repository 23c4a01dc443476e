import CUContext
import Glibc
import Synchronization

/// Stack sizes and the pool that recycles stacks.
///
/// Every coroutine runs on its own `mmap`ed stack. Below each stack lies a `PROT_NONE` guard
/// region of ``guardSize`` bytes, so an overflow faults instead of overwriting a neighbour:
/// Swift emits no stack probes and one frame can be 20 KiB, which would jump a single guard
/// page. Pages are committed only when touched, so a generous size costs address space, not
/// memory.
///
/// - ``minimumSize``: 64 KiB. The first string interpolation of an error alone used 41 KiB in a
///   debug build, so smaller stacks are refused.
/// - ``defaultSize``: 256 KiB unless changed; set it once at start-up, or pass `stackSize:` to
///   ``co_launch(on:name:stackSize:_:)`` for one coroutine.
/// - Each stack costs two kernel memory mappings, and Linux allows about 65 530 per process
///   (`vm.max_map_count`), so dedicated stacks stop near 32 700 live coroutines. Past that,
///   launching fails cleanly: the task is rejected with ``CoroutineError/stackAllocationFailed(size:errno:)``.
public enum CoroutineStack {
  /// The smallest stack a coroutine may ask for, in bytes.
  public static let minimumSize = 64 * 1024

  /// The largest stack a coroutine may ask for, in bytes (1 GiB).
  public static let maximumSize = 1 << 30

  /// The `PROT_NONE` region below every stack, in bytes: larger than any plausible frame.
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

  /// How many finished stacks of each size the pool keeps for reuse (64 at start). Stacks
  /// returned beyond this are unmapped at once.
  public static var poolCapacity: Int {
    get { poolCapacityStorage.load(ordering: .relaxed) }
    set {
      precondition(newValue >= 0, "CoroutineStack.poolCapacity: \(newValue) is negative")
      poolCapacityStorage.store(newValue, ordering: .relaxed)
      StackPool.shared.trim(toPerSize: newValue)
    }
  }

  /// Unmaps every pooled stack. Stacks of running or suspended coroutines are untouched.
  public static func drainPool() { StackPool.shared.trim(toPerSize: 0) }

  @usableFromInline  // called from the inlinable co_launch
  static func validate(_ size: Int, in call: String) {
    precondition(
      size >= minimumSize,
      "\(call): stack size \(size) is below the minimum of \(minimumSize) bytes")
    precondition(
      size <= maximumSize,
      "\(call): stack size \(size) is above the maximum of \(maximumSize) bytes")
  }
}

/// A process-wide pool of fibers (a stack plus its saved context), keyed by stack size.
final class StackPool: @unchecked Sendable {  // all mutable state is behind `mutex`
  static let shared = StackPool()

  private let mutex = Mutex<Void>(())
  // Unchecked: only ever touched inside `mutex`, by code that calls nothing that could reach
  // them again; the dynamic exclusivity checks cost more than the rest of a pooled take.
  @exclusivity(unchecked) private var free: [Int: [OpaquePointer]] = [:]
  @exclusivity(unchecked) private var mappedBySize: [Int: Int] = [:]
  @exclusivity(unchecked) private var pooledTotal = 0
  @exclusivity(unchecked) private var mappedTotal = 0

  /// A fiber with at least `size` usable bytes of stack, from the pool or freshly mapped.
  func take(size: Int) throws(CoroutineError) -> OpaquePointer {
    let reused: OpaquePointer? = mutex.withLock { _ in
      guard let fiber = free[size]?.popLast() else { return nil }
      pooledTotal -= 1
      return fiber
    }
    if let reused { return reused }
    guard let fiber = cu_fiber_new(size, CoroutineStack.guardSize) else {
      throw .stackAllocationFailed(size: size, errno: errno)
    }
    mutex.withLock { _ in
      mappedBySize[size, default: 0] += 1
      mappedTotal += 1
    }
    return fiber
  }

  /// Returns a finished fiber: pooled while the pool has room for its size, unmapped otherwise.
  func give(_ fiber: OpaquePointer, size: Int) {
    let keep = mutex.withLock { _ -> Bool in
      if free[size, default: []].count < CoroutineStack.poolCapacity {
        free[size, default: []].append(fiber)
        pooledTotal += 1
        return true
      }
      mappedBySize[size, default: 0] -= 1
      mappedTotal -= 1
      return false
    }
    if !keep { cu_fiber_free(fiber) }
  }

  /// Unmaps pooled fibers until at most `limit` of each size remain.
  func trim(toPerSize limit: Int) {
    let surplus = mutex.withLock { _ -> [OpaquePointer] in
      var released: [OpaquePointer] = []
      for (size, fibers) in free where fibers.count > limit {
        released += fibers[limit...]
        free[size] = Array(fibers[..<limit])
        mappedBySize[size, default: 0] -= fibers.count - limit
      }
      pooledTotal -= released.count
      mappedTotal -= released.count
      return released
    }
    surplus.forEach { cu_fiber_free($0) }
  }

  /// Pooled fibers, all sizes.
  var pooledCount: Int { mutex.withLock { _ in pooledTotal } }
  /// Mapped fibers (in use or pooled), all sizes.
  var mappedCount: Int { mutex.withLock { _ in mappedTotal } }
  /// Pooled fibers of one size.
  func pooledCount(size: Int) -> Int { mutex.withLock { _ in free[size]?.count ?? 0 } }
  /// Fibers of one size in use by live coroutines (mapped and not pooled), read at one moment
  /// so that a concurrent trim cannot skew it.
  func inUseCount(size: Int) -> Int {
    mutex.withLock { _ in (mappedBySize[size] ?? 0) - (free[size]?.count ?? 0) }
  }
  /// Mapped fibers of one size (in use or pooled).
  func mappedCount(size: Int) -> Int { mutex.withLock { _ in mappedBySize[size] ?? 0 } }
}
