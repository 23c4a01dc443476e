import Synchronization

/// One group loop's ready coroutines, which idle loops of the group may take half of: a ring of
/// fixed size that its owner (the loop's thread) appends to and takes from in FIFO order, and
/// that thieves take from the front of, as Go's scheduler does with its per-processor queues.
///
/// The owner appends without a locked instruction (a slot store, then a releasing store of
/// `tail`); taking, by the owner or a thief, claims slots with a compare-and-swap of `head`. A
/// thief copies the slots before claiming them, and the owner never overwrites a slot between
/// `head` and `tail`, so a failed claim only means another taker was faster.
///
/// When the ring is full, its older half moves to `spilled`, behind a lock of the queue's own,
/// from which the owner refills the ring once it runs dry (and takes one job in 64, so that
/// nothing waits there for ever), and a thief takes half once the ring is empty. Each loop keeps
/// its own: jobs that any loop of the group could take went to whichever looked first, and the
/// coroutines then finished, and freed their memory, on another thread than the one that made
/// them, which the allocator's locks make slow.
///
/// An entry is a coroutine's address with its low bit set for a start (a coroutine record is
/// aligned to 16 bytes): a started coroutine keeps itself alive, and one not yet started is kept
/// alive by its task, so the queue holds no reference.
final class StealQueue: @unchecked Sendable {  // slots, head and tail are atomics; see above
  static let capacity = 256

  private let slots: UnsafeMutablePointer<Atomic<UInt>>
  private let head = Atomic<UInt32>(0)
  private let tail = Atomic<UInt32>(0)
  /// Entries that did not fit the ring, oldest first.
  private let spilled = Mutex<Ring<StealableJob>>(Ring())
  /// `spilled`'s count, to look at without the lock.
  private let spilledCount = Atomic<Int>(0)

  init() {
    slots = .allocate(capacity: Self.capacity)
    for index in 0..<Self.capacity { (slots + index).initialize(to: Atomic(0)) }
  }

  deinit {
    slots.deinitialize(count: Self.capacity)
    slots.deallocate()
  }

  /// Entries queued now (a snapshot when read off the owner's thread).
  var count: Int { ringCount + spilledCount.load(ordering: .acquiring) }

  private var ringCount: Int {
    let head = head.load(ordering: .acquiring)
    return Int(tail.load(ordering: .acquiring) &- head)
  }

  var isEmpty: Bool { count == 0 }

  private func slot(_ index: UInt32) -> UnsafeMutablePointer<Atomic<UInt>> {
    slots + Int(index & UInt32(Self.capacity - 1))
  }

  /// Appends `job` (owner only), moving the ring's older half to `spilled` if it is full.
  func append(_ job: StealableJob) {
    while !appendToRing(job) { spillOlderHalf() }
  }

  /// Appends `job` to the ring (owner only); false, with nothing appended, when it is full.
  private func appendToRing(_ job: StealableJob) -> Bool {
    let tail = tail.load(ordering: .relaxed)
    guard tail &- head.load(ordering: .acquiring) < UInt32(Self.capacity) else { return false }
    slot(tail).pointee.store(job.bits, ordering: .relaxed)
    self.tail.store(tail &+ 1, ordering: .releasing)
    return true
  }

  /// Takes the oldest entry of the ring, refilling it from `spilled` when it is empty (owner
  /// only). One take in `fairnessInterval` takes the oldest spilled entry instead, so that a
  /// loop whose ring never runs dry still runs what spilled, as Go's scheduler looks at its
  /// global queue one time in 61.
  func popFirst() -> StealableJob? {
    pops &+= 1
    if pops % Self.fairnessInterval == 0, let job = popSpilled() { return job }
    if let job = popFromRing() { return job }
    guard refill(from: self) > 0 else { return nil }
    return popFromRing()
  }

  static let fairnessInterval: UInt32 = 64

  /// Takes owned by the calling thread so far (owner only).
  @exclusivity(unchecked) private var pops: UInt32 = 0

  private func popSpilled() -> StealableJob? {
    guard spilledCount.load(ordering: .acquiring) > 0 else { return nil }
    return spilled.withLock { jobs in
      let job = jobs.popFirst()
      spilledCount.store(jobs.count, ordering: .releasing)
      return job
    }
  }

  private func popFromRing() -> StealableJob? {
    while true {
      let head = head.load(ordering: .acquiring)
      guard head != tail.load(ordering: .relaxed) else { return nil }
      let bits = slot(head).pointee.load(ordering: .relaxed)
      if self.head.compareExchange(
        expected: head, desired: head &+ 1, ordering: .acquiringAndReleasing
      ).exchanged {
        return StealableJob(bits: bits)
      }
    }
  }

  /// Takes the older half of `victim`'s entries (rounded up) into this queue, which must be
  /// empty and owned by the calling thread: from its ring, else from what it spilled. Returns
  /// how many it took.
  func steal(from victim: StealQueue) -> Int {
    let taken = stealFromRing(of: victim)
    return taken > 0 ? taken : refill(from: victim)
  }

  private func stealFromRing(of victim: StealQueue) -> Int {
    let tail = tail.load(ordering: .relaxed)
    while true {
      let head = victim.head.load(ordering: .acquiring)
      let available = victim.tail.load(ordering: .acquiring) &- head
      // A head read before the owner took past it can make the difference look huge: read again.
      guard available <= UInt32(Self.capacity) else { continue }
      let taking = available &- available / 2
      guard taking > 0 else { return 0 }
      for offset in 0..<taking {
        let bits = victim.slot(head &+ offset).pointee.load(ordering: .relaxed)
        slot(tail &+ offset).pointee.store(bits, ordering: .relaxed)
      }
      if victim.head.compareExchange(
        expected: head, desired: head &+ taking, ordering: .acquiringAndReleasing
      ).exchanged {
        self.tail.store(tail &+ taking, ordering: .releasing)
        return Int(taking)
      }
    }
  }

  /// Moves the oldest entries `victim` spilled into this queue's ring, which must be empty and
  /// owned by the calling thread: half of them (at least one) if `victim` is another queue, up
  /// to half the ring if it is this one. Returns how many.
  private func refill(from victim: StealQueue) -> Int {
    guard victim.spilledCount.load(ordering: .acquiring) > 0 else { return 0 }
    return victim.spilled.withLock { jobs in
      // The count looked at without the lock may be stale: another taker may have been first.
      guard !jobs.isEmpty else { return 0 }
      let half = victim === self ? jobs.count : max(jobs.count / 2, 1)
      let taking = min(half, Self.capacity / 2)
      for _ in 0..<taking { _ = appendToRing(jobs.popFirst()!) }
      victim.spilledCount.store(jobs.count, ordering: .releasing)
      return taking
    }
  }

  /// Moves the older half of the ring's entries to `spilled`, oldest first (owner only), for
  /// when the ring is full. Through a buffer on the stack: a heap array of half the ring is a
  /// "large" request for glibc's allocator, which first merges every small free block, so each
  /// spill made the next small allocations split blocks again.
  private func spillOlderHalf() {
    withUnsafeTemporaryAllocation(of: UInt.self, capacity: Self.capacity / 2) { buffer in
      let taken = takeOlderHalf(into: buffer)
      guard taken > 0 else { return }
      spilled.withLock { spilled in
        for index in 0..<taken { spilled.append(StealableJob(bits: buffer[index])) }
        spilledCount.store(spilled.count, ordering: .releasing)
      }
    }
  }

  /// Claims the older half of the ring's entries (owner only), copying them into `buffer`;
  /// how many (none if thieves took them meanwhile).
  private func takeOlderHalf(into buffer: UnsafeMutableBufferPointer<UInt>) -> Int {
    while true {
      let head = head.load(ordering: .acquiring)
      let taking = (tail.load(ordering: .relaxed) &- head) / 2
      guard taking > 0 else { return 0 }
      for offset in 0..<taking {
        buffer[Int(offset)] = slot(head &+ offset).pointee.load(ordering: .relaxed)
      }
      if self.head.compareExchange(
        expected: head, desired: head &+ taking, ordering: .acquiringAndReleasing
      ).exchanged {
        return Int(taking)
      }
    }
  }
}

/// A coroutine to start or to resume, in one word (see ``StealQueue``).
struct StealableJob {
  let bits: UInt

  init(bits: UInt) { self.bits = bits }

  init(resume coroutine: Unmanaged<Coroutine>) {
    bits = UInt(bitPattern: coroutine.toOpaque())
  }

  init(start coroutine: Unmanaged<Coroutine>) {
    bits = UInt(bitPattern: coroutine.toOpaque()) | 1
  }

  var coroutine: Unmanaged<Coroutine> {
    Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: bits & ~1)!)
  }

  var isStart: Bool { bits & 1 == 1 }

  var loopJob: LoopJob { isStart ? .start(coroutine) : .resume(coroutine) }

  /// A job of a loop's roaming inbox, which holds only coroutines.
  init(_ job: consuming LoopJob) {
    switch consume job {
    case .resume(let coroutine): self.init(resume: coroutine)
    case .start(let coroutine): self.init(start: coroutine)
    case .closure: coStop("a closure in a loop's inbox of roaming coroutines")
    }
  }
}
