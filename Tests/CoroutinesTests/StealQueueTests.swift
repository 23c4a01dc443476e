import Testing

@testable import Coroutines

/// A group loop's ready queue: its ring, what spills past it, and what thieves take.
@Suite struct StealQueueTests {
  /// Distinct, 16-byte aligned stand-ins for coroutine addresses (the queue never follows them).
  func jobs(_ count: Int) -> [StealableJob] {
    (1...count).map { StealableJob(bits: UInt($0) << 4) }
  }

  func drain(_ queue: StealQueue) -> [UInt] {
    var taken: [UInt] = []
    while let job = queue.popFirst() { taken.append(job.bits) }
    return taken
  }

  @Test func entriesPastTheRingAreKeptAndEachComesOutOnce() {
    let queue = StealQueue()
    let all = jobs(StealQueue.capacity * 3 + 7)
    for job in all { queue.append(job) }
    #expect(queue.count == all.count)
    #expect(drain(queue).sorted() == all.map(\.bits))
    #expect(queue.isEmpty)
  }

  @Test func whatSpilledRunsEvenIfTheRingNeverRunsDry() {
    let queue = StealQueue()
    let all = jobs(StealQueue.capacity + 1)  // the oldest half spills to make room for the last
    for job in all { queue.append(job) }
    var next = all.count
    // Each job taken queues one more, as a loop whose coroutines keep waking others would.
    var taken: [UInt] = []
    for _ in 0..<Int(StealQueue.fairnessInterval) {
      taken.append(queue.popFirst()!.bits)
      next += 1
      queue.append(StealableJob(bits: UInt(next) << 4))
    }
    #expect(taken.contains(all[0].bits))
  }

  @Test func aThiefTakesTheOlderHalfOfTheRing() {
    let (victim, thief) = (StealQueue(), StealQueue())
    let all = jobs(10)
    for job in all { victim.append(job) }
    #expect(thief.steal(from: victim) == 5)
    #expect(drain(thief) == all.prefix(5).map(\.bits))
    #expect(drain(victim) == all.suffix(5).map(\.bits))
  }

  @Test func aThiefTakesFromWhatSpilledOnceTheRingIsEmpty() {
    let (victim, thief) = (StealQueue(), StealQueue())
    let all = jobs(StealQueue.capacity + 1)  // the first half spills to make room for the last
    for job in all { victim.append(job) }
    var stolen: [UInt] = []
    while thief.steal(from: victim) > 0 { stolen += drain(thief) }
    // Between them every entry is taken exactly once.
    #expect(Set(stolen).count == stolen.count)
    #expect(stolen.count == all.count)
    #expect(victim.isEmpty)
  }

  @Test func jobsPushedFromElsewhereComeOutOnceOldestFirst() {
    let queue = StealQueue()
    let all = jobs(StealQueue.capacity * 2 + 3)
    // Each push reports how many waited before it.
    #expect(all.map { queue.pushFromElsewhere($0) } == Array(0..<all.count))
    #expect(queue.count == all.count)
    let taken = drain(queue)
    // Oldest first, but for the one take in `fairnessInterval` that goes to the overflow first.
    let firstRun = Int(StealQueue.fairnessInterval) - 1
    #expect(taken.prefix(firstRun) == all.prefix(firstRun).map(\.bits)[...])
    #expect(taken.sorted() == all.map(\.bits))
    #expect(queue.isEmpty && queue.overflowIsEmpty)
  }

  @Test func aTurnMovesAtMostHalfARingOfTheOverflowAndNothingSpillsBack() {
    let queue = StealQueue()
    let all = jobs(StealQueue.capacity * 10)
    for job in all { _ = queue.pushFromElsewhere(job) }
    let half = StealQueue.capacity / 2
    #expect(queue.takeOverflowBatch() == half)
    #expect(queue.takeOverflowBatch() == half)
    // The ring is full: the next turn moves nothing rather than spilling it back.
    #expect(queue.takeOverflowBatch() == 0)
    #expect(queue.count == all.count)
    // Room for ten: ten move.
    for _ in 0..<10 { _ = queue.popFirst() }
    #expect(queue.takeOverflowBatch() == 10)
    #expect(queue.count == all.count - 10)
  }

  @Test func aJobPushedFromElsewhereRunsThoughTheRingNeverEmpties() {
    let queue = StealQueue()
    for job in jobs(StealQueue.capacity - 8) { queue.append(job) }
    let outside = StealableJob(bits: UInt(1_000_000) << 4)
    _ = queue.pushFromElsewhere(outside)
    var next = StealQueue.capacity
    var pops = 0
    // Turns of a loop whose every job queues another: the batch moves the outside job into the
    // ring at the first turn, behind what was there.
    while pops < StealQueue.capacity * 2 {
      _ = queue.takeOverflowBatch()
      let job = queue.popFirst()!
      pops += 1
      if job.bits == outside.bits { break }
      next += 1
      queue.append(StealableJob(bits: UInt(next) << 4))
    }
    #expect(pops == StealQueue.capacity - 7)
  }

  @Test func aThiefTakesHalfOfWhatWasPushedFromElsewhere() {
    let (victim, thief) = (StealQueue(), StealQueue())
    let all = jobs(10)
    for job in all { _ = victim.pushFromElsewhere(job) }
    #expect(thief.steal(from: victim) == 5)
    #expect(drain(thief) == all.prefix(5).map(\.bits))
    #expect(drain(victim) == all.suffix(5).map(\.bits))
  }
}
