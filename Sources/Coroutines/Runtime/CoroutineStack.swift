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
