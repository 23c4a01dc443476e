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
/// Behind the ring, one `overflow` FIFO under a lock of the queue's own takes whatever does not
/// go into the ring: its older half when it is full, and the coroutines of the group that
/// threads outside the group wake or launch. Go's scheduler has the same one way out of a
/// processor's ring (a full ring's half and a wake-up from outside both go to its run queue
/// under the scheduler's lock). Not a lock-free inbox: that can only be emptied all at once,
/// so a ring spilling into one would move every waiting coroutine through the ring again at
/// every turn, a cost that grows with the coroutines waiting. The owner moves a batch
/// of the overflow into the ring at each turn (`takeOverflowBatch`), refills the ring from it
/// once it runs dry, and takes one job in 64 from it, so that nothing waits there for ever; a
/// thief takes half of it once the ring is empty. Each loop keeps its own: jobs that any loop
/// of the group could take went to whichever looked first, and the coroutines then finished,
/// and freed their memory, on another thread than the one that made them, which the
/// allocator's locks make slow.
///
/// An entry is a coroutine's address with its low bit set for a start (a coroutine record is
/// aligned to 16 bytes): a started coroutine keeps itself alive, and one not yet started is kept
/// alive by its task, so the queue holds no reference.
final class StealQueue: @unchecked Sendable {  // slots, head and tail are atomics; see above
  static let capacity = 256

  private let slots: UnsafeMutablePointer<Atomic<UInt>>
  private let head = Atomic<UInt32>(0)
  private let tail = Atomic<UInt32>(0)
  /// Entries that did not fit the ring and entries pushed from outside the group, oldest
  /// first.
  private let overflow = Mutex<Ring<StealableJob>>(Ring())
  /// `overflow`'s count, to look at without the lock. Stored under the lock, sequentially
  /// consistent after a push from outside, as a loop going to sleep marks itself asleep before
  /// looking at it (see `pushFromElsewhere`).
  private let overflowCount = Atomic<Int>(0)

  init() {
    slots = .allocate(capacity: Self.capacity)
    for index in 0..<Self.capacity { (slots + index).initialize(to: Atomic(0)) }
  }

  deinit {
    slots.deinitialize(count: Self.capacity)
    slots.deallocate()
  }

  /// Entries queued now (a snapshot when read off the owner's thread).
  var count: Int { ringCount + overflowCount.load(ordering: .acquiring) }

  private var ringCount: Int {
    let head = head.load(ordering: .acquiring)
    return Int(tail.load(ordering: .acquiring) &- head)
  }

  var isEmpty: Bool { count == 0 }

  /// True when nothing waits in the overflow. Sequentially consistent, like the store of a push
  /// from outside: a loop that marks itself asleep and then finds it empty is seen asleep by
  /// the next pusher.
  var overflowIsEmpty: Bool { overflowCount.load(ordering: .sequentiallyConsistent) == 0 }

  /// A cheaper look for a loop that spins or starts a turn: it only needs to notice soon.
  var overflowMayHoldWork: Bool { overflowCount.load(ordering: .relaxed) != 0 }

  private func slot(_ index: UInt32) -> UnsafeMutablePointer<Atomic<UInt>> {
    slots + Int(index & UInt32(Self.capacity - 1))
  }

  /// Appends `job` (owner only), moving the ring's older half to the overflow if it is full.
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

  /// Queues `job` from any thread but the owner's: a coroutine of the group that a thread
  /// outside the group woke or launched, behind what waits in the overflow. Returns how many
  /// entries waited there before it.
  ///
  /// The count is stored sequentially consistent before the caller looks at whether the loop
  /// sleeps, as the loop marks itself asleep before looking at the count: of the two, at least
  /// one sees the other, and no loop sleeps beside the job.
  func pushFromElsewhere(_ job: StealableJob) -> Int {
    overflow.withLock { jobs in
      let before = jobs.count
      jobs.append(job)
      overflowCount.store(before + 1, ordering: .sequentiallyConsistent)
      return before
    }
  }

  /// Moves the overflow's oldest entries into the ring (owner only): up to half a ring, and no
  /// more than it has room for, so that nothing spills back. Returns how many. Called at each
  /// turn, so that coroutines woken from outside run within a turn or two even on a loop whose
  /// ring never empties, and the turn's cost stays bounded however many wait there.
  func takeOverflowBatch() -> Int {
    guard overflowMayHoldWork else { return 0 }
    let room = Self.capacity - ringCount
    guard room > 0 else { return 0 }
    return refill(from: self, atMost: min(room, Self.capacity / 2))
  }

  /// Takes the oldest entry of the ring, refilling it from the overflow when it is empty (owner
  /// only). One take in `fairnessInterval` takes the overflow's oldest entry instead, so that a
  /// loop whose ring never runs dry still runs what overflowed, as Go's scheduler looks at its
  /// global queue one time in 61.
  func popFirst() -> StealableJob? {
    pops &+= 1
    if pops % Self.fairnessInterval == 0, let job = popOverflow() { return job }
    if let job = popFromRing() { return job }
    guard refill(from: self, atMost: Self.capacity / 2) > 0 else { return nil }
    return popFromRing()
  }

  static let fairnessInterval: UInt32 = 64

  /// Takes owned by the calling thread so far (owner only).
  @exclusivity(unchecked) private var pops: UInt32 = 0

  private func popOverflow() -> StealableJob? {
    guard overflowCount.load(ordering: .acquiring) > 0 else { return nil }
    return overflow.withLock { jobs in
      let job = jobs.popFirst()
      overflowCount.store(jobs.count, ordering: .releasing)
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
  /// empty and owned by the calling thread: from its ring, else from its overflow. Returns
  /// how many it took.
  func steal(from victim: StealQueue) -> Int {
    let taken = stealFromRing(of: victim)
    return taken > 0 ? taken : refill(from: victim, atMost: Self.capacity / 2)
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

  /// Moves the oldest entries of `victim`'s overflow into this queue's ring, which must have
  /// room for `limit` and be owned by the calling thread: half of them (at least one) if
  /// `victim` is another queue, all if it is this one, and `limit` at most. Returns how many.
  private func refill(from victim: StealQueue, atMost limit: Int) -> Int {
    // Sequentially consistent (a plain load on x86), as a thief about to sleep counts itself
    // among the sleepers before this look, and a pusher stores the count before it looks at
    // them.
    guard victim.overflowCount.load(ordering: .sequentiallyConsistent) > 0 else { return 0 }
    return victim.overflow.withLock { jobs in
      // The count looked at without the lock may be stale: another taker may have been first.
      guard !jobs.isEmpty else { return 0 }
      let share = victim === self ? jobs.count : max(jobs.count / 2, 1)
      let taking = min(share, limit)
      for _ in 0..<taking { _ = appendToRing(jobs.popFirst()!) }
      victim.overflowCount.store(jobs.count, ordering: .releasing)
      return taking
    }
  }

  /// Moves the older half of the ring's entries to the overflow, oldest first (owner only), for
  /// when the ring is full. Through a buffer on the stack: a heap array of half the ring is a
  /// "large" request for glibc's allocator, which first merges every small free block, so each
  /// spill made the next small allocations split blocks again.
  private func spillOlderHalf() {
    withUnsafeTemporaryAllocation(of: UInt.self, capacity: Self.capacity / 2) { buffer in
      let taken = takeOlderHalf(into: buffer)
      guard taken > 0 else { return }
      overflow.withLock { jobs in
        for index in 0..<taken { jobs.append(StealableJob(bits: buffer[index])) }
        overflowCount.store(jobs.count, ordering: .releasing)
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

}
