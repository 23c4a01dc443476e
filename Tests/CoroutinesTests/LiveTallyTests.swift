import Testing

@testable import Coroutines

/// The per-thread tallies of a loop group's live coroutines.
@Suite struct LiveTallyTests {
  /// Each tally fills one cache line, so that threads counting on neighbouring tallies never
  /// write to the same line.
  @Test func eachTallyFillsOneCacheLine() {
    #expect(MemoryLayout<LiveTally>.stride == 64)
    let tallies = LiveTally.allocate(3)
    defer { tallies.deallocate() }
    #expect(UInt(bitPattern: tallies) % 64 == 0)
  }

  /// The sum counts creations and finishes on any tally, by its own thread or shared.
  @Test func theSumIsCreationsLessFinishesOverAllTallies() {
    let tallies = LiveTally.allocate(3)
    defer { tallies.deallocate() }
    #expect(LiveTally.sum(tallies, count: 3) == 0)
    tallies[0].countHere(finished: false)
    tallies[0].countHere(finished: false)
    tallies[2].countShared(finished: false)
    tallies[1].countHere(finished: true)
    #expect(LiveTally.sum(tallies, count: 3) == 2)
    tallies[2].countShared(finished: true)
    tallies[0].countHere(finished: true)
    #expect(LiveTally.sum(tallies, count: 3) == 0)
  }
}
