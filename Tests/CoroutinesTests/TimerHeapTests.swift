import Testing

@testable import Coroutines

/// The loop's timer queue: a heap beside a run of timers that arrived in deadline order. Whatever
/// the mix, timers come out by deadline, then in the order they were added.
@Suite struct TimerHeapTests {
  struct Timer: TimerOrdered, Equatable {
    let deadline: UInt64
    let sequence: UInt64
  }

  /// Pops everything and checks the order against a sort of what went in.
  private func drain(_ heap: inout TimerHeap<Timer>, expecting added: [Timer]) {
    var popped: [Timer] = []
    while let timer = heap.removeFirst() { popped.append(timer) }
    #expect(heap.isEmpty)
    #expect(popped == added.sorted { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) })
  }

  @Test func timersInDeadlineOrderComeOutInThatOrder() {
    var heap = TimerHeap<Timer>()
    let added = (0..<3000).map { Timer(deadline: UInt64($0 / 3), sequence: UInt64($0)) }
    added.forEach { heap.insert($0) }
    #expect(heap.count == 3000)
    #expect(heap.first == added[0])
    drain(&heap, expecting: added)
  }

  @Test func timersInAnyOrderComeOutByDeadlineThenInsertion() {
    var generator = SplitMix64(seed: 42)
    var heap = TimerHeap<Timer>()
    var added: [Timer] = []
    for sequence in 0..<5000 {
      // Mostly increasing deadlines (like co_delay with one delay), with earlier ones mixed in.
      let base = UInt64(sequence) * 10
      let deadline = generator.next() % 4 == 0 ? generator.next() % (base + 1) : base
      let timer = Timer(deadline: deadline, sequence: UInt64(sequence))
      added.append(timer)
      heap.insert(timer)
    }
    drain(&heap, expecting: added)
  }

  @Test func insertingWhileTakingKeepsTheOrder() {
    var generator = SplitMix64(seed: 7)
    var heap = TimerHeap<Timer>()
    var now: UInt64 = 0
    var sequence: UInt64 = 0
    var pending: [Timer] = []
    for _ in 0..<4000 {
      if generator.next() % 3 != 0 || pending.isEmpty {
        let delay = generator.next() % 5 == 0 ? generator.next() % 50 : 100
        let timer = Timer(deadline: now + delay, sequence: sequence)
        sequence += 1
        pending.append(timer)
        heap.insert(timer)
      } else {
        let expected = pending.min { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }!
        #expect(heap.first == expected)
        #expect(heap.removeFirst() == expected)
        pending.removeAll { $0 == expected }
        now = expected.deadline
      }
      #expect(heap.count == pending.count)
    }
    drain(&heap, expecting: pending)
  }

  /// An entry holding an object, like the loop's sleepers (which hold their coroutine).
  final class Token {}
  struct Held: TimerOrdered {
    let deadline: UInt64
    let sequence: UInt64
    var token: Token
  }

  @Test func peekingCopiesNothingAndTakingMovesTheEntryOut() {
    var heap = TimerHeap<Held>()
    // Two in order (the run) and one due earlier than the run's last (the heap).
    for (deadline, sequence) in [(10, 0), (30, 1), (20, 2)] as [(UInt64, UInt64)] {
      heap.insert(Held(deadline: deadline, sequence: sequence, token: Token()))
    }
    #expect(heap.firstDeadline == 10)
    #expect(heap.withFirst { $0.sequence } == 0)
    // The run's second, whatever the heap holds.
    #expect(heap.withQueued(at: 1) { $0.sequence } == 1)
    #expect(heap.withQueued(at: 2) { $0.sequence } == nil)
    var order: [UInt64] = []
    while var taken = heap.removeFirst() {
      // The heap kept no copy of what it handed out: this is the token's only reference.
      #expect(isKnownUniquelyReferenced(&taken.token))
      order.append(taken.sequence)
      #expect(heap.firstDeadline == heap.first?.deadline)
    }
    #expect(order == [0, 2, 1])
    #expect(heap.firstDeadline == nil && heap.withFirst { $0.sequence } == nil)
  }

  @Test func theFirstDeadlineFollowsWhicheverHeadIsEarlier() {
    var generator = SplitMix64(seed: 11)
    var heap = TimerHeap<Timer>()
    var added: [Timer] = []
    for sequence in 0..<2000 {
      let deadline = generator.next() % 3 == 0 ? generator.next() % 5000 : UInt64(sequence) * 3
      let timer = Timer(deadline: deadline, sequence: UInt64(sequence))
      added.append(timer)
      heap.insert(timer)
      let earliest = added.min { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }!
      #expect(heap.firstDeadline == earliest.deadline)
      #expect(heap.withFirst { $0 } == earliest)
    }
    drain(&heap, expecting: added)
  }
}
