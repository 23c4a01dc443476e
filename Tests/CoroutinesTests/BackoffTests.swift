import Testing

@testable import Coroutines

@Suite struct BackoffTests {
  @Test func aConstantBackoffWaitsTheSameEveryTime() {
    let backoff = CoBackoff.constant(0.5)
    #expect((1...5).map { backoff.delay(afterFailure: $0) } == [0.5, 0.5, 0.5, 0.5, 0.5])
    #expect(CoBackoff.none.delay(afterFailure: 3) == 0)
  }

  @Test func anExponentialBackoffGrowsByItsMultiplierUpToItsMaximum() {
    let doubling = CoBackoff.exponential(initial: 0.25, maximum: 3)
    #expect((1...6).map { doubling.delay(afterFailure: $0) } == [0.25, 0.5, 1, 2, 3, 3])
    let tripling = CoBackoff.exponential(initial: 1, multiplier: 3)
    #expect((1...4).map { tripling.delay(afterFailure: $0) } == [1, 3, 9, 27])
  }

  @Test func aHugeFailureCountStaysAtTheMaximumQuickly() {
    let backoff = CoBackoff.exponential(initial: 1, maximum: 60)
    #expect(backoff.delay(afterFailure: .max) == 60)
    let unbounded = CoBackoff.exponential(initial: 1, multiplier: 1)
    #expect(unbounded.delay(afterFailure: .max) == 1)
  }

  @Test func jitterDrawsBetweenTheReducedAndTheFullWait() {
    let backoff = CoBackoff.exponential(initial: 1, maximum: 8, jitter: 0.5)
    var generator = SplitMix64(seed: 7)
    var draws: [Double] = []
    for failure in 1...4 {
      for _ in 0..<100 {
        let delay = backoff.delay(afterFailure: failure, using: &generator)
        let base = backoff.baseDelay(afterFailure: failure)
        #expect(delay >= base * 0.5 && delay <= base)
        draws.append(delay / base)
      }
    }
    #expect(Set(draws).count > 300)
    #expect(draws.min()! < 0.55 && draws.max()! > 0.95)
  }

  @Test func aJitteredRetryStartsNoLaterThanTheFullWait() {
    let scheduler = CoroutineTestLoop()
    let started = Journal<Double>()
    let backoff = CoBackoff.exponential(initial: 2, jitter: 1)
    let result = CoFuture<Int>.retry(2, backoff: backoff, on: scheduler) {
      started.append(scheduler.now)
      return rejected(Failure.disk)
    }
    scheduler.runUntilIdle()
    scheduler.advance(by: 2)
    #expect(started.entries.count == 2)
    #expect(started.entries[1] <= 2)
    #expect(failure(result.result) == .disk)
  }
}
