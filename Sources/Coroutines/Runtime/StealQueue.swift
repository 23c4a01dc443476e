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
/// An entry is a coroutine's address with its low bit set for a start (a coroutine record is
/// aligned to 16 bytes): a started coroutine keeps itself alive, and one not yet started is kept
/// alive by its task, so the queue holds no reference.
final class StealQueue: @unchecked Sendable {  // slots, head and tail are atomics; see above
  static let capacity = 256

  private let slots: UnsafeMutablePointer<Atomic<UInt>>
  private let head = Atomic<UInt32>(0)
  private let tail = Atomic<UInt32>(0)

  init() {
    slots = .allocate(capacity: Self.capacity)
    for index in 0..<Self.capacity { (slots + index).initialize(to: Atomic(0)) }
  }

  deinit {
    slots.deinitialize(count: Self.capacity)
    slots.deallocate()
  }

  /// Entries queued now (a snapshot when read off the owner's thread).
  var count: Int {
    let head = head.load(ordering: .acquiring)
    return Int(tail.load(ordering: .acquiring) &- head)
  }

  var isEmpty: Bool { count == 0 }

  private func slot(_ index: UInt32) -> UnsafeMutablePointer<Atomic<UInt>> {
    slots + Int(index & UInt32(Self.capacity - 1))
  }

  /// Appends `job` (owner only); false, with nothing appended, when the ring is full.
  func append(_ job: StealableJob) -> Bool {
    let tail = tail.load(ordering: .relaxed)
    guard tail &- head.load(ordering: .acquiring) < UInt32(Self.capacity) else { return false }
    slot(tail).pointee.store(job.bits, ordering: .relaxed)
    self.tail.store(tail &+ 1, ordering: .releasing)
    return true
  }

  /// Takes the oldest entry (owner only).
  func popFirst() -> StealableJob? {
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
  /// empty and owned by the calling thread; returns how many it took.
  func steal(from victim: StealQueue) -> Int {
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

  /// Moves the older half of the entries out, oldest first (owner only), for when the ring is
  /// full; empty if thieves took them meanwhile.
  func takeOlderHalf() -> [StealableJob] {
    while true {
      let head = head.load(ordering: .acquiring)
      let taking = (tail.load(ordering: .relaxed) &- head) / 2
      guard taking > 0 else { return [] }
      let jobs = (0..<taking).map {
        StealableJob(bits: slot(head &+ $0).pointee.load(ordering: .relaxed))
      }
      if self.head.compareExchange(
        expected: head, desired: head &+ taking, ordering: .acquiringAndReleasing
      ).exchanged {
        return jobs
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
