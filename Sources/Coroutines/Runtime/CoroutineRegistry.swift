import CLinux
import CUContext
import Glibc
import Synchronization

/// A scheduler that wants to know how many coroutines belong to it (a loop that runs until
/// they are all finished).
protocol CoroutineAccounting: AnyObject {
  func coroutineCreated()
  func coroutineFinished()
}

/// `scheduler` as the loop that counts its coroutines, if it is one. Class casts to the two
/// loops rather than `as? any CoroutineAccounting`: a cast to a protocol searches the
/// conformance tables (about 300 instructions per launch), a class cast compares metadata.
func accounting(of scheduler: any CoroutineScheduler) -> (any CoroutineAccounting)? {
  if let loop = scheduler as? CoroutineLoop { return loop }
  if let testLoop = scheduler as? CoroutineTestLoop { return testLoop }
  if let group = scheduler as? CoroutineLoopGroup { return group }
  return nil
}

/// The loop that counts a coroutine (see `CoroutineAccounting`), unretained: the coroutine's
/// `home` is that loop and keeps it alive for as long as the coroutine lives. A strong
/// reference cost a retain of the loop at creation and a release at destruction, and an
/// `unowned(unsafe)` existential was retained and released around every call through it.
struct AccountingLoop {
  private enum Kind { case loop, testLoop, group }
  private let loop: Unmanaged<AnyObject>
  private let kind: Kind

  /// `home` as the loop that counts its coroutines, if it is one (class casts, as in
  /// `accounting(of:)`).
  init?(of home: any CoroutineScheduler) {
    if let loop = home as? CoroutineLoop {
      self.loop = Unmanaged.passUnretained(loop)
      kind = .loop
    } else if let testLoop = home as? CoroutineTestLoop {
      self.loop = Unmanaged.passUnretained(testLoop)
      kind = .testLoop
    } else if let group = home as? CoroutineLoopGroup {
      self.loop = Unmanaged.passUnretained(group)
      kind = .group
    } else {
      return nil
    }
  }

  /// The loop group `group`.
  init(group: Unmanaged<CoroutineLoopGroup>) {
    loop = Unmanaged<AnyObject>.fromOpaque(group.toOpaque())
    kind = .group
  }

  func coroutineCreated() {
    loop._withUnsafeGuaranteedRef {
      switch kind {
      case .loop: unsafeDowncast($0, to: CoroutineLoop.self).coroutineCreated()
      case .testLoop: unsafeDowncast($0, to: CoroutineTestLoop.self).coroutineCreated()
      case .group: unsafeDowncast($0, to: CoroutineLoopGroup.self).coroutineCreated()
      }
    }
  }

  func coroutineFinished() {
    loop._withUnsafeGuaranteedRef {
      switch kind {
      case .loop: unsafeDowncast($0, to: CoroutineLoop.self).coroutineFinished()
      case .testLoop: unsafeDowncast($0, to: CoroutineTestLoop.self).coroutineFinished()
      case .group: unsafeDowncast($0, to: CoroutineLoopGroup.self).coroutineFinished()
      }
    }
  }
}

/// Every live coroutine (created and not yet finished), for counts, dumps and the stall
/// watchdog.
///
/// Coroutines are kept in one of a few tables, each behind its own lock, chosen by the thread
/// that creates them: a coroutine takes a lock only when it is created and when it finishes,
/// never to suspend or resume, and launches on different threads do not meet on the same lock.
/// The tables hold no reference: a coroutine leaves its table when it finishes or, at the
/// latest, in its `deinit`, and readers look at it only while holding the table's lock.
enum CoroutineRegistry {
  /// The tables, in one allocation that is never freed: reaching one costs no retain (an array
  /// of objects retained and released the shard on every link and unlink).
  // nonisolated(unsafe): each table is behind its own mutex, and the pointer never changes.
  nonisolated(unsafe) private static let shards: UnsafeMutablePointer<Shard> = {
    let shards = UnsafeMutablePointer<Shard>.allocate(capacity: shardCount)
    for index in 0..<shardCount { (shards + index).initialize(to: Shard()) }
    return shards
  }()

  /// A table and its lock, padded so that the parts two threads use never share a cache line:
  /// packed side by side, the tables of a group's loops (neighbours, as threads take tables in
  /// turn) moved between the cores at every launch.
  private struct Shard: ~Copyable {
    let table = Mutex(Slots())
    private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
      (0, 0, 0, 0, 0, 0, 0, 0)
  }
  private static let shardCount = 1 << shardBits

  /// Coroutines created and not yet finished: each table counts its own under its lock, which
  /// a link and an unlink take anyway (a process-wide atomic counter cost two locked
  /// instructions per coroutine, on a line that every thread's coroutines contend for).
  static var liveCount: Int {
    (0..<shardCount).reduce(0) { sum, index in sum + shards[index].table.withLock { $0.live } }
  }

  /// A coroutine was created: it is counted and listed, and its loop (`accounting`, looked up
  /// once by the caller: the cast searched the conformance tables) counts it.
  static func coroutineCreated(_ coroutine: Coroutine, accounting: AccountingLoop?) {
    link(coroutine)
    accounting?.coroutineCreated()
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
  static func coroutineFinished(_ coroutine: Coroutine, accounting: AccountingLoop?) {
    coroutine.registryEntry.fiber.store(0, ordering: .relaxed)
    unlink(coroutine, finished: true)
    accounting?.coroutineFinished()
  }

  /// Called from `deinit`: a coroutine dropped without finishing must not stay in a list. It
  /// still counts as live: it was created and never finished.
  static func coroutineDestroyed(_ coroutine: Coroutine) {
    unlink(coroutine, finished: false)
  }

  // MARK: The lists

  /// The lists store addresses scrambled, so leak checkers (LeakSanitizer) do not take them
  /// for references: a coroutine that nothing else can reach is still reported as leaked.
  private static let scramble: UInt = 0xA5A5_0000_0000_5A5A

  private static func address(_ coroutine: Coroutine) -> UInt {
    UInt(bitPattern: Unmanaged.passUnretained(coroutine).toOpaque()) ^ scramble
  }

  /// A coroutine's entry names its table and its slot there: `slot << shardBits | table`.
  private static let shardBits = 4

  /// The calling thread's table.
  private static var currentShard: Int { Int(cu_tls_registry_shard(Int32(shardCount))) }

  /// Runs `body` on the coroutine at (scrambled) `address` without retaining it (it may be in `deinit`,
  /// waiting for the lock the caller holds).
  private static func withCoroutine<R>(at address: UInt, _ body: (Coroutine) -> R) -> R {
    Unmanaged<Coroutine>.fromOpaque(UnsafeRawPointer(bitPattern: address ^ scramble)!)
      ._withUnsafeGuaranteedRef(body)
  }

  /// Lists the coroutine in the calling thread's table: the threads of a group, each creating
  /// coroutines, then take locks (and touch lines) that no other thread uses but to list the
  /// coroutines that finish on it. Tables chosen by address made every launch and every finish
  /// of a two-loop group move a lock's line between the cores about half the time.
  private static func link(_ coroutine: Coroutine) {
    let shard = currentShard
    let slot = shards[shard].table.withLock { $0.insert(address(coroutine)) }
    coroutine.registryEntry.slot.store(slot << shardBits | shard, ordering: .relaxed)
  }

  private static func unlink(_ coroutine: Coroutine, finished: Bool) {
    // A load and a store, not an exchange: only the coroutine's own code writes its slot, and
    // a locked instruction there, right after the stores that retire a coroutine, waited for
    // all of them to drain.
    let entry = coroutine.registryEntry.slot.load(ordering: .relaxed)
    if entry >= 0 { coroutine.registryEntry.slot.store(-1, ordering: .relaxed) }
    guard entry >= 0 || finished else { return }
    // The count of a coroutine that is no longer listed may come off any table's.
    let shard = entry >= 0 ? entry & (1 << shardBits - 1) : currentShard
    shards[shard].table.withLock { slots in
      if entry >= 0 { slots.remove(at: entry >> shardBits) }
      if finished { slots.live -= 1 }
    }
  }

  /// The unfinished coroutines of the scheduler at `home` with a coroutine-local binding that
  /// `matches`, retained. Their bindings are read as they stand: call it only where none of
  /// that scheduler's coroutines can run meanwhile (on its own thread, or between a test
  /// loop's turns). What a simulated host's crash cancels.
  static func coroutines(
    of home: UnsafeMutableRawPointer, boundWhere matches: (CoLocalBinding) -> Bool
  ) -> [Coroutine] {
    var found: [Coroutine] = []
    for index in 0..<shardCount {
      shards[index].table.withLock { slots in
        for index in 0..<slots.count where Slots.isCoroutine(slots[index]) {
          withCoroutine(at: slots[index]) { coroutine in
            // Only another scheduler's coroutines are touched from here but through `home`,
            // which never changes; a finished one may be on its way out.
            guard coroutine.homeAddress == home, coroutine.currentState != .finished else {
              return
            }
            var binding = coroutine.locals.map { unsafeDowncast($0, to: CoLocalBinding.self) }
            while let current = binding {
              if matches(current) {
                found.append(coroutine)
                return
              }
              binding = current.next
            }
          }
        }
      }
    }
    return found
  }

  /// A snapshot of every live coroutine. Each list is read under its lock, and a parked
  /// coroutine's stack is unwound there too (with `backtraces`): a coroutine can finish only
  /// after it has left its list. The stack depth is asked of the kernel afterwards, from
  /// addresses only, and the frames are named last, from a cache of names by address.
  static func snapshots(backtraces: Bool = false) -> [CoroutineSnapshot] {
    var result: [CoroutineSnapshot] = []
    var fibers: [UInt] = []
    var returnAddresses: [Int: [UInt]] = [:]
    var testLoops: [Int: Unmanaged<CoroutineTestLoop>] = [:]
    var memo = CoroutineBacktraces.Memo()
    for index in 0..<shardCount {
      shards[index].table.withLock { slots in
        for index in 0..<slots.count where Slots.isCoroutine(slots[index]) {
          let address = slots[index]
          withCoroutine(at: address) { coroutine in
            let snapshot = CoroutineSnapshot(coroutine, identity: address)
            let fiber = coroutine.registryEntry.fiber.load(ordering: .relaxed)
            if snapshot.isParked, snapshot.reason.isOnVirtualClock,
              let testLoop = coroutine.home as? CoroutineTestLoop
            {
              testLoops[result.count] = Unmanaged.passRetained(testLoop)
            }
            if backtraces, snapshot.isParked, fiber != 0,
              let frames = CoroutineBacktraces.returnAddresses(
                of: coroutine, on: fiber, memo: &memo)
            {
              returnAddresses[result.count] = frames
            }
            result.append(snapshot)
            fibers.append(fiber)
          }
        }
      }
    }
    let now = monotonicNanoseconds()
    var virtualNow: [ObjectIdentifier: UInt64] = [:]
    for index in result.indices where result[index].isParked {
      var clock = now
      if let testLoop = testLoops[index] {
        let loop = testLoop.takeRetainedValue()
        clock = virtualNow[ObjectIdentifier(loop)] ?? loop.clockNanoseconds
        virtualNow[ObjectIdentifier(loop)] = clock
      } else if result[index].reason.isOnVirtualClock {
        continue  // its test loop is gone: no clock to read
      }
      let parkedAt = result[index].parkedAt
      result[index].waitingFor = clock > parkedAt ? Double(clock - parkedAt) / 1e9 : 0
    }
    for index in result.indices where fibers[index] != 0 {
      let top = UnsafeRawPointer(bitPattern: fibers[index])!
      result[index].stackUsed = stackHighWater(below: top, looking: result[index].stackSize)
    }
    if !returnAddresses.isEmpty {
      CoroutineBacktraces.withNames { names in
        for (index, frames) in returnAddresses {
          result[index].backtrace = frames.map { names.name(of: $0) }
        }
      }
    }
    return result
  }
}

/// One part of the registry: a table of (scrambled) coroutine addresses, behind a lock. A
/// coroutine takes a free slot and gives it back, so listing touches no other coroutine.
///
/// A free slot holds the index of the next free one, shifted and tagged with a low 1 bit (an
/// address is 16-byte aligned, and the scramble leaves its low bits clear). Raw storage rather
/// than an array: a link or an unlink then checks no buffer's uniqueness and calls nothing
/// (about 40 instructions per launch). Noncopyable, because it owns that storage.
private struct Slots: ~Copyable {
  private var addresses: UnsafeMutablePointer<UInt>?
  private var capacity = 0
  /// Slots in use or free; the entries from here on were never used.
  private(set) var count = 0
  /// The first free slot, -1 for none.
  private var firstFree = -1
  /// Coroutines of this table created and not yet finished (see `CoroutineRegistry.liveCount`):
  /// one more at each insert, one fewer when a coroutine finishes. One dropped unfinished
  /// leaves the table but stays counted.
  var live = 0

  init() {}

  deinit { free(addresses) }

  static func isCoroutine(_ entry: UInt) -> Bool { entry & 1 == 0 }

  subscript(index: Int) -> UInt { addresses![index] }

  mutating func insert(_ address: UInt) -> Int {
    live += 1
    guard firstFree >= 0 else {
      if count == capacity { grow() }
      addresses![count] = address
      count += 1
      return count - 1
    }
    let slot = firstFree
    firstFree = Int(bitPattern: addresses![slot] >> 1) - 1
    addresses![slot] = address
    return slot
  }

  mutating func remove(at slot: Int) {
    addresses![slot] = UInt(bitPattern: firstFree + 1) << 1 | 1
    firstFree = slot
  }

  /// With `realloc`: glibc resizes a large table's mapping without copying it (see
  /// `Ring.grow()`), so a burst of launches does not fault each page in twice.
  private mutating func grow() {
    let newCapacity = max(64, capacity * 2)
    guard let raw = realloc(addresses, newCapacity * MemoryLayout<UInt>.stride) else {
      coStop("CoroutineRegistry: out of memory listing \(newCapacity) coroutines")
    }
    addresses = raw.bindMemory(to: UInt.self, capacity: newCapacity)
    capacity = newCapacity
  }
}

/// What the registry keeps inside each coroutine. Every field is atomic so it can be read by a
/// dump or the watchdog on another thread.
struct CoroutineRegistryEntry: ~Copyable {
  /// Switches into the coroutine so far. Only the thread switching in writes it, so a plain
  /// load and store suffice (no read-modify-write on the hot path).
  let switches = Atomic<UInt64>(0)
  /// The fiber the coroutine runs on (its address), 0 before it starts and once it finished.
  let fiber = Atomic<UInt>(0)
  /// Where the registry keeps the coroutine, -1 once it has left. Only the coroutine itself
  /// writes it (when created, and when it finishes or is destroyed).
  let slot = Atomic<Int>(-1)
  /// Why the coroutine parked last (a ``CoroutineWaitReason``'s bits), written as it arms each
  /// wait; meaningful only while it is parked.
  let waitReason = Atomic<UInt64>(0)
  /// When it parked last, on its scheduler's clock (see `Coroutine.parkClock`): nanoseconds,
  /// virtual on a test loop (then `waitReason` carries ``CoroutineWaitReason/virtualClock``).
  let parkedAt = Atomic<UInt64>(0)

  /// Records a park: two plain stores (relaxed atomics), read only by snapshots.
  @inline(__always)
  func notePark(_ reason: CoroutineWaitReason, at clock: UInt64) {
    waitReason.store(reason.bits, ordering: .relaxed)
    parkedAt.store(clock, ordering: .relaxed)
  }

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
