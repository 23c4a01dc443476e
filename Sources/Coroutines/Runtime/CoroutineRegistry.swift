import CUContext
import Synchronization

/// A scheduler that wants to know how many coroutines belong to it (a loop that runs until
/// they are all finished).
protocol CoroutineAccounting: AnyObject {
  func coroutineCreated()
  func coroutineFinished()
}

/// Every live coroutine (created and not yet finished), for counts, dumps and the stall
/// watchdog.
///
/// Coroutines are linked into one of a few lists, chosen by address, each behind its own lock:
/// a coroutine takes a lock only when it is created and when it finishes, never to suspend or
/// resume, and launches on different threads rarely meet on the same lock. The lists hold no
/// reference: a coroutine leaves its list when it finishes or, at the latest, in its `deinit`,
/// and readers look at it only while holding the list's lock.
enum CoroutineRegistry {
  private static let live = Atomic<Int>(0)
  private static let shards = (0..<16).map { _ in Shard() }

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

  /// A coroutine was created: it is counted and listed.
  static func coroutineCreated(_ coroutine: Coroutine, accounting: (any CoroutineAccounting)?) {
    link(coroutine)
    coroutineCreated(accounting: accounting)
  }

  /// The coroutine is about to run on `fiber` for the first time: the fiber learns its name,
  /// so a stack overflow report can say whose stack it was and how large it was meant to be.
  static func coroutineStarted(_ coroutine: Coroutine, on fiber: OpaquePointer) {
    cu_fiber_set_label(fiber, coroutine.name, coroutine.stackSize)
    // A shared stack's depth is not the coroutine's own: only dedicated stacks are measured.
    guard !coroutine.usesSharedStack else { return }
    coroutine.registryEntry.fiber.store(UInt(bitPattern: fiber), ordering: .relaxed)
  }

  /// A coroutine finished (or will never run): it leaves the count and the list.
  static func coroutineFinished(_ coroutine: Coroutine, accounting: (any CoroutineAccounting)?) {
    coroutine.registryEntry.fiber.store(0, ordering: .relaxed)
    unlink(coroutine)
    coroutineFinished(accounting: accounting)
  }

  /// Called from `deinit`: a coroutine dropped without finishing must not stay in a list.
  static func coroutineDestroyed(_ coroutine: Coroutine) {
    // Only the coroutine itself links and unlinks, so this check needs no lock.
    guard coroutine.registryEntry.linked.load(ordering: .relaxed) else { return }
    unlink(coroutine)
  }

  // MARK: The lists

  /// The lists store addresses scrambled, so leak checkers (LeakSanitizer) do not take them
  /// for references: a coroutine that nothing else can reach is still reported as leaked.
  private static let scramble: UInt = 0xA5A5_0000_0000_5A5A

  private static func address(_ coroutine: Coroutine) -> UInt {
    UInt(bitPattern: Unmanaged.passUnretained(coroutine).toOpaque()) ^ scramble
  }

  private static func shard(of address: UInt) -> Int {
    Int(truncatingIfNeeded: ((address >> 4) &* 0x9E37_79B9_7F4A_7C15) >> 60)
  }

  /// Runs `body` on the coroutine at (scrambled) `address` without retaining it (it may be in `deinit`,
  /// waiting for the lock the caller holds).
  private static func withCoroutine<R>(at address: UInt, _ body: (Coroutine) -> R) -> R {
    Unmanaged<Coroutine>.fromOpaque(UnsafeRawPointer(bitPattern: address ^ scramble)!)
      ._withUnsafeGuaranteedRef(body)
  }

  private static func link(_ coroutine: Coroutine) {
    let me = address(coroutine)
    shards[shard(of: me)].head.withLock { head in
      coroutine.registryEntry.previous.store(0, ordering: .relaxed)
      coroutine.registryEntry.next.store(head, ordering: .relaxed)
      if head != 0 {
        withCoroutine(at: head) { $0.registryEntry.previous.store(me, ordering: .relaxed) }
      }
      head = me
      coroutine.registryEntry.linked.store(true, ordering: .relaxed)
    }
  }

  private static func unlink(_ coroutine: Coroutine) {
    let me = address(coroutine)
    shards[shard(of: me)].head.withLock { head in
      guard coroutine.registryEntry.linked.load(ordering: .relaxed) else { return }
      let previous = coroutine.registryEntry.previous.load(ordering: .relaxed)
      let next = coroutine.registryEntry.next.load(ordering: .relaxed)
      if previous != 0 {
        withCoroutine(at: previous) { $0.registryEntry.next.store(next, ordering: .relaxed) }
      } else {
        head = next
      }
      if next != 0 {
        withCoroutine(at: next) { $0.registryEntry.previous.store(previous, ordering: .relaxed) }
      }
      coroutine.registryEntry.linked.store(false, ordering: .relaxed)
    }
  }

  /// A snapshot of every live coroutine. Each list is read under its lock; the stack depth is
  /// asked of the kernel afterwards, from addresses only.
  static func snapshots() -> [CoroutineSnapshot] {
    var result: [CoroutineSnapshot] = []
    var fibers: [UInt] = []
    for shard in shards {
      shard.head.withLock { head in
        var cursor = head
        while cursor != 0 {
          cursor = withCoroutine(at: cursor) { coroutine in
            result.append(CoroutineSnapshot(coroutine, identity: cursor))
            fibers.append(coroutine.registryEntry.fiber.load(ordering: .relaxed))
            return coroutine.registryEntry.next.load(ordering: .relaxed)
          }
        }
      }
    }
    for index in result.indices where fibers[index] != 0 {
      let top = UnsafeRawPointer(bitPattern: fibers[index])!
      result[index].stackUsed = cu_stack_high_water(top, result[index].stackSize)
    }
    return result
  }
}

/// One list of the registry: the address of its first coroutine, behind a lock.
private final class Shard: Sendable {
  let head = Mutex<UInt>(0)
}

/// What the registry keeps inside each coroutine. Every field is atomic so it can be read by a
/// dump or the watchdog on another thread; the links change only under the list's lock.
struct CoroutineRegistryEntry: ~Copyable {
  /// Switches into the coroutine so far. Only the thread switching in writes it, so a plain
  /// load and store suffice (no read-modify-write on the hot path).
  let switches = Atomic<UInt64>(0)
  /// The fiber the coroutine runs on (its address), 0 before it starts and once it finished.
  let fiber = Atomic<UInt>(0)
  let next = Atomic<UInt>(0)
  let previous = Atomic<UInt>(0)
  let linked = Atomic<Bool>(false)

  /// Counts a switch into the coroutine; the watchdog sees a running coroutine whose count
  /// stands still.
  @inline(__always)
  func noteSwitchIn() {
    switches.store(switches.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
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
