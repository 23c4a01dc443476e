import CUContext
import Glibc
import Synchronization

extension CoroutineStack {
  /// Where a coroutine's frames live.
  ///
  /// - ``dedicated``: a guarded stack of its own (the default). Any scheduler; a few KiB of
  ///   memory per parked coroutine, and on Linux before 6.13, where each stack takes two kernel
  ///   memory mappings, about 32 700 live coroutines at most (`vm.max_map_count`).
  /// - ``shared``: one of a few stacks shared by the coroutines of one ``CoroutineLoop``. While a
  ///   coroutine is parked, the part of the stack it was using waits in a heap buffer of exactly
  ///   its size, so a million parked coroutines fit in a few GiB. The coroutine must stay on its
  ///   loop (`co_await(on:)` to another scheduler throws
  ///   ``CoroutineError/sharedStackCannotMove``), and nothing may use a pointer to one of its
  ///   local variables while it is parked. Switching between coroutines that take turns on one
  ///   stack costs a copy of the bytes they use.
  public enum Mode: Sendable, Equatable {
    /// A guarded stack of its own.
    case dedicated
    /// One of the few stacks its ``CoroutineLoop`` shares between its shared-stack coroutines.
    case shared
  }

  private static let sharedByDefault = Atomic<Bool>(false)

  /// The stack mode of coroutines launched without `stack:` (``Mode/dedicated`` at start).
  ///
  /// With ``Mode/shared``, coroutines launched on a ``CoroutineLoop`` without `stack:` share its
  /// stacks, and coroutines launched on any other scheduler still get dedicated stacks.
  public static var defaultMode: Mode {
    get { sharedByDefault.load(ordering: .relaxed) ? .shared : .dedicated }
    set { sharedByDefault.store(newValue == .shared, ordering: .relaxed) }
  }
}

/// Whether a coroutine launched with `requested` on `scheduler` runs on a shared stack. An
/// explicit request on a scheduler that is not a loop is a programming error: such a scheduler
/// may run two coroutines of one stack on two threads at once.
@usableFromInline
func sharedStackChosen(_ requested: CoroutineStack.Mode?, on scheduler: any CoroutineScheduler)
  -> Bool
{
  guard (requested ?? CoroutineStack.defaultMode) == .shared else { return false }
  if scheduler is CoroutineLoop || scheduler is CoroutineLoopGroup { return true }
  coPrecondition(
    requested == nil,
    "co_launch(stack: .shared): shared stacks need a CoroutineLoop scheduler, not \(type(of: scheduler))"
  )
  return false
}

/// The shared stacks of one loop: a few per stack size, handed out round robin as coroutines
/// start. More stacks mean fewer copies when several coroutines take turns; each costs its
/// mapping and whatever pages its deepest coroutine touched.
final class SharedStackSet {
  static let stacksPerSize = 4

  private struct Ring {
    var stacks: [OpaquePointer] = []
    var next = 0
  }

  // Touched only by the thread running the loop, which starts the loop's coroutines.
  @exclusivity(unchecked) private var rings: [Int: Ring] = [:]

  /// A shared stack of `size` usable bytes for a coroutine about to start.
  func stack(size: Int) throws(CoroutineError) -> OpaquePointer {
    var ring = rings[size] ?? Ring()
    defer { rings[size] = ring }
    if ring.stacks.count < Self.stacksPerSize {
      guard let stack = cu_shared_stack_new(size, CoroutineStack.guardSize) else {
        throw .stackAllocationFailed(size: size, errno: errno)
      }
      ring.stacks.append(stack)
      return stack
    }
    let stack = ring.stacks[ring.next]
    ring.next = (ring.next + 1) % ring.stacks.count
    return stack
  }

  /// Shared stacks mapped so far, all sizes.
  var count: Int { rings.values.reduce(0) { $0 + $1.stacks.count } }

  deinit {
    // The loop outlives its coroutines (each holds it as its home), so no fiber is bound here.
    for ring in rings.values { ring.stacks.forEach { cu_shared_stack_free($0) } }
  }
}
