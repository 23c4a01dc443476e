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
    coroutineCreated(accounting: home as? any CoroutineAccounting)
  }

  static func coroutineFinished(on home: any CoroutineScheduler) {
    coroutineFinished(accounting: home as? any CoroutineAccounting)
  }

  /// The same, for a caller that has looked up its scheduler's accounting once already: the
  /// protocol cast searches the runtime's conformance tables.
  static func coroutineCreated(accounting: (any CoroutineAccounting)?) {
    live.add(1, ordering: .relaxed)
    accounting?.coroutineCreated()
  }

  static func coroutineFinished(accounting: (any CoroutineAccounting)?) {
    live.subtract(1, ordering: .relaxed)
    accounting?.coroutineFinished()
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
