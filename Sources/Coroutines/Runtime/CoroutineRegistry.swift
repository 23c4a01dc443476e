import CUContext
import Synchronization

/// A scheduler that wants to know how many coroutines belong to it (a loop that runs until
/// they are all finished).
protocol CoroutineAccounting: AnyObject {
  func coroutineCreated()
  func coroutineFinished()
}

/// Process-wide counts of coroutines, kept with atomics because tests and schedulers run on
/// many threads at once.
enum CoroutineRegistry {
  private static let live = Atomic<Int>(0)

  static var liveCount: Int { live.load(ordering: .relaxed) }

  static func coroutineCreated(on home: any CoroutineScheduler) {
    live.add(1, ordering: .relaxed)
    (home as? any CoroutineAccounting)?.coroutineCreated()
  }

  /// The coroutine is about to run on `fiber` for the first time: the fiber learns its name,
  /// so a stack overflow report can say whose stack it was
  /// and how large it was meant to be.
  static func coroutineStarted(_ coroutine: Coroutine, on fiber: OpaquePointer) {
    cu_fiber_set_label(fiber, coroutine.name, coroutine.stackSize)
  }

  static func coroutineFinished(on home: any CoroutineScheduler) {
    live.subtract(1, ordering: .relaxed)
    (home as? any CoroutineAccounting)?.coroutineFinished()
  }
}

/// A snapshot of the runtime's resources, for tests and diagnostics.
public struct CoroutineStatistics: Sendable, Equatable {
  /// Coroutines created and not yet finished, in the whole process.
  public let liveCoroutines: Int
  /// Stacks mapped right now: in use by live coroutines, or pooled for reuse.
  public let mappedStacks: Int
  /// Stacks kept in the pool for reuse.
  public let pooledStacks: Int

  /// The counts at this moment.
  public static var current: CoroutineStatistics {
    CoroutineStatistics(
      liveCoroutines: CoroutineRegistry.liveCount,
      mappedStacks: StackPool.shared.mappedCount,
      pooledStacks: StackPool.shared.pooledCount)
  }
}
