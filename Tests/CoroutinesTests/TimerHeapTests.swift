import Testing

@testable import Coroutines

/// The loop's timer queue: a heap beside a run of timers that arrived in deadline order. Whatever
/// the mix, timers come out by deadline, then in the order they were added.
@Suite struct TimerHeapTests {
  /// What a test knows of an entry: its deadline and its place among equal deadlines.
  struct Timer: Equatable {
    let deadline: UInt64
    let sequence: UInt64

    /// An entry for the heap, firing a timer that does nothing.
    var entry: TimerEntry {
      TimerEntry(
        LoopTimer(deadline: deadline, sequence: sequence, job: {}, onCancel: {}),
        sequence: sequence)
    }

    init(deadline: UInt64, sequence: UInt64) {
      self.deadline = deadline
      self.sequence = sequence
    }

    init(_ entry: TimerEntry) {
      self.init(deadline: entry.deadline, sequence: entry.sequence)
    }
  }

  /// Pops everything and checks the order against a sort of what went in.
  private func drain(_ heap: inout TimerHeap, expecting added: [Timer]) {
    var popped: [Timer] = []
    while let entry = heap.removeFirst() { popped.append(Timer(entry)) }
    let empty = heap.isEmpty
    #expect(empty)
    #expect(popped == added.sorted { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) })
  }

  /// The first timer, read in place.
  private func first(_ heap: borrowing TimerHeap) -> Timer? {
    heap.first.map { Timer(deadline: $0.pointee.deadline, sequence: $0.pointee.sequence) }
  }

  /// How many entries a compaction dropped, or nil when it did not look.
  private func count(of dropped: consuming TimerEntryRing?) -> Int? {
    guard let dropped else { return nil }
    return dropped.count
  }

  @Test func timersInDeadlineOrderComeOutInThatOrder() {
    var heap = TimerHeap()
    let added = (0..<3000).map { Timer(deadline: UInt64($0 / 3), sequence: UInt64($0)) }
    added.forEach { heap.insert($0.entry) }
    #expect(heap.count == 3000)
    #expect(first(heap) == added[0])
    drain(&heap, expecting: added)
  }

  @Test func timersInAnyOrderComeOutByDeadlineThenInsertion() {
    var generator = SplitMix64(seed: 42)
    var heap = TimerHeap()
    var added: [Timer] = []
    for sequence in 0..<5000 {
      // Mostly increasing deadlines (like co_delay with one delay), with earlier ones mixed in.
      let base = UInt64(sequence) * 10
      let deadline = generator.next() % 4 == 0 ? generator.next() % (base + 1) : base
      let timer = Timer(deadline: deadline, sequence: UInt64(sequence))
      added.append(timer)
      heap.insert(timer.entry)
    }
    drain(&heap, expecting: added)
  }

  @Test func insertingWhileTakingKeepsTheOrder() {
    var generator = SplitMix64(seed: 7)
    var heap = TimerHeap()
    var now: UInt64 = 0
    var sequence: UInt64 = 0
    var pending: [Timer] = []
    for _ in 0..<4000 {
      if generator.next() % 3 != 0 || pending.isEmpty {
        let delay = generator.next() % 5 == 0 ? generator.next() % 50 : 100
        let timer = Timer(deadline: now + delay, sequence: sequence)
        sequence += 1
        pending.append(timer)
        heap.insert(timer.entry)
      } else {
        let expected = pending.min { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }!
        #expect(first(heap) == expected)
        #expect(heap.removeFirst().map(Timer.init) == expected)
        pending.removeAll { $0 == expected }
        now = expected.deadline
      }
      #expect(heap.count == pending.count)
    }
    drain(&heap, expecting: pending)
  }

  @Test func peekingCopiesNothingAndTakingMovesTheEntryOut() {
    var heap = TimerHeap()
    var watched: [UInt64: Weak] = [:]
    // Two in order (the run) and one due earlier than the run's last (the heap).
    for (deadline, sequence) in [(10, 0), (30, 1), (20, 2)] as [(UInt64, UInt64)] {
      let timer = LoopTimer(deadline: deadline, sequence: sequence, job: {}, onCancel: {})
      watched[sequence] = Weak(timer)
      heap.insert(TimerEntry(timer, sequence: sequence))
    }
    #expect(heap.firstDeadline == 10)
    #expect(first(heap)?.sequence == 0)
    #expect(heap.firstIsDead == false)
    var order: [UInt64] = []
    while let taken = heap.removeFirst() {
      let sequence = taken.sequence
      order.append(sequence)
      #expect(heap.firstDeadline == first(heap)?.deadline)
      // The heap kept no copy of what it handed out: once the entry taken is gone, so is its
      // timer.
      _ = consume taken
      #expect(watched[sequence]?.object == nil)
    }
    #expect(order == [0, 2, 1])
    #expect(heap.firstDeadline == nil)
    #expect(heap.first == nil)
    #expect(heap.firstIsDead == false)
  }

  @Test func aCancelledFirstTimerIsDead() {
    var heap = TimerHeap()
    let timer = LoopTimer(deadline: 5, sequence: 0, job: {}, onCancel: {})
    heap.insert(TimerEntry(timer, sequence: 0))
    #expect(heap.firstIsDead == false)
    timer.cancel()
    #expect(heap.firstIsDead == true)
  }

  @Test func compactingDropsTheCancelledAndKeepsTheOrderOfTheRest() {
    var generator = SplitMix64(seed: 23)
    var heap = TimerHeap()
    var live: [Timer] = []
    var cancelled = 0
    for sequence in 0..<3000 {
      // Both parts: mostly in order (the run), some due earlier (the heap).
      let base = UInt64(sequence) * 10
      let deadline = generator.next() % 3 == 0 ? generator.next() % (base + 1) : base
      let timer = LoopTimer(deadline: deadline, sequence: UInt64(sequence), job: {}, onCancel: {})
      heap.insert(TimerEntry(timer, sequence: UInt64(sequence)))
      if generator.next() % 2 == 0 {
        timer.cancel()
        cancelled += 1
      } else {
        live.append(Timer(deadline: deadline, sequence: UInt64(sequence)))
      }
    }
    let crowded = heap.isCrowded
    #expect(crowded)
    let dropped = count(of: heap.compact(liveAtMost: live.count))
    #expect(dropped == cancelled)
    #expect(heap.count == live.count)
    let stillCrowded = heap.isCrowded
    #expect(!stillCrowded)
    // Insertions after it still come out in order, whichever part they join.
    for sequence in 3000..<3200 {
      let deadline = generator.next() % 2 == 0 ? UInt64(sequence) * 10 : generator.next() % 30_000
      let timer = Timer(deadline: deadline, sequence: UInt64(sequence))
      live.append(timer)
      heap.insert(timer.entry)
    }
    drain(&heap, expecting: live)
  }

  @Test func aHeapOfMostlyLiveTimersIsNotSearchedUntilItDoubles() {
    var heap = TimerHeap()
    var sequence: UInt64 = 0
    func add(_ count: Int) {
      for _ in 0..<count {
        heap.insert(Timer(deadline: sequence, sequence: sequence).entry)
        sequence += 1
      }
    }
    add(TimerHeap.fewestCrowded + 1)
    var crowded = heap.isCrowded
    #expect(crowded)
    // All live: nothing to drop, and no new look before twice as many.
    let dropped = count(of: heap.compact(liveAtMost: heap.count))
    #expect(dropped == nil)
    crowded = heap.isCrowded
    #expect(!crowded)
    add(TimerHeap.fewestCrowded + 1)
    crowded = heap.isCrowded
    #expect(!crowded)
    add(1)
    crowded = heap.isCrowded
    #expect(crowded)
  }

  @Test func theFirstDeadlineFollowsWhicheverHeadIsEarlier() {
    var generator = SplitMix64(seed: 11)
    var heap = TimerHeap()
    var added: [Timer] = []
    for sequence in 0..<2000 {
      let deadline = generator.next() % 3 == 0 ? generator.next() % 5000 : UInt64(sequence) * 3
      let timer = Timer(deadline: deadline, sequence: UInt64(sequence))
      added.append(timer)
      heap.insert(timer.entry)
      let earliest = added.min { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }!
      #expect(heap.firstDeadline == earliest.deadline)
      #expect(first(heap) == earliest)
    }
    drain(&heap, expecting: added)
  }
}

/// A reference that does not keep its object alive.
private final class Weak {
  weak var object: LoopTimer?
  init(_ object: LoopTimer) { self.object = object }
}
