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
}
