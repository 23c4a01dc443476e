import Testing

@testable import Coroutines

/// On a seeded test loop, the case a `co_select` takes among several ready ones comes from the
/// seed, so a failing interleaving replays with it.
@Suite struct SelectSeedTests {
  /// The cases picked by 40 selects over four always-ready channels, on a loop with `seed`.
  private func picks(seed: UInt64?) -> [Int] {
    let loop = CoroutineTestLoop(seed: seed)
    let picked = ModelsLog<Int>()
    co_launch(on: loop) {
      let channels = (0..<4).map { _ in CoChannel<Int>(capacity: 64) }
      for (index, channel) in channels.enumerated() {
        for _ in 0..<40 { _ = channel.trySend(index) }
      }
      for _ in 0..<40 {
        let index = try co_select { select in
          for channel in channels { select.receive(from: channel) { $0 } }
        }
        picked.append(index)
      }
    }
    loop.runUntilIdle()
    return picked.values
  }

  @Test func theSameSeedPicksTheSameCases() {
    let first = picks(seed: 42)
    #expect(first.count == 40)
    #expect(picks(seed: 42) == first)
    // Still a shuffle: every case gets picked.
    #expect(Set(first) == [0, 1, 2, 3])
  }

  @Test func anotherSeedPicksOtherCases() {
    // 40 picks among 4 cases agree by chance with probability 4⁻⁴⁰.
    #expect(picks(seed: 42) != picks(seed: 43))
  }

  @Test func withoutASeedTheCasesStillVary() {
    #expect(Set(picks(seed: nil)) == [0, 1, 2, 3])
  }
}
