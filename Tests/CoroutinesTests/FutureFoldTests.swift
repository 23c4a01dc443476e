import Testing

@testable import Coroutines

@Suite struct FutureFoldTests {
  @Test func eachStepStartsFromThePreviousPartialResultOnceItIsFulfilled() {
    let steps = Journal<String>()
    let promises = (0..<3).map { _ in CoPromise<Int>() }
    let total = CoFuture<Int>.reduce([1, 2, 3], 100) { partial, element in
      steps.append("\(partial)+\(element)")
      return promises[element - 1]
    }
    #expect(steps.entries == ["100+1"])
    promises[0].fulfill(101)
    #expect(steps.entries == ["100+1", "101+2"])
    promises[1].fulfill(103)
    promises[2].fulfill(106)
    #expect(steps.entries == ["100+1", "101+2", "103+3"])
    #expect(value(total.result) == 106)
  }

  @Test func noWorkGivesTheInitialValue() {
    let result = CoFuture<String>.reduce([Int](), "start") { _, _ in fulfilled("never") }
    #expect(value(result.result) == "start")
  }

  @Test func theFirstErrorRejectsTheFoldAndNothingMoreStarts() {
    let steps = Counter()
    let rejectedStep = CoFuture<Int>.reduce(1...5, 0) { partial, element in
      steps.increment()
      return element == 2 ? rejected(Failure.disk) : fulfilled(partial + element)
    }
    #expect(failure(rejectedStep.result) == .disk)
    #expect(steps.value == 2)
    let thrownStep = CoFuture<Int>.reduce(1...5, 0) { _, _ -> CoFuture<Int> in
      throw Failure.second
    }
    #expect(failure(thrownStep.result) == .second)
  }

  @Test func cancellingTheFoldCancelsTheStepUnderWayAndStartsNoMore() {
    let pending = CoPromise<Int>()
    let steps = Counter()
    let total = CoFuture<Int>.reduce(1...3, 0) { _, _ in
      steps.increment()
      return pending
    }
    total.cancel()
    #expect(isCancellation(pending.result))
    #expect(isCancellation(total.result))
    #expect(steps.value == 1)
  }

  @Test func stepsRunOnTheScheduler() {
    let loop = CoroutineTestLoop()
    let total = CoFuture<Int>.reduce(1...4, 0, on: loop) { sum, element in
      fulfilled(sum + element)
    }
    #expect(total.result == nil)
    loop.runUntilIdle()
    #expect(value(total.result) == 10)
  }

  @Test func aLongFoldOverSettledStepsDoesNotRecurse() throws {
    // Every step is settled when made; a recursive fold would overflow a coroutine's stack.
    let count = 100_000
    let sum = try CoroutineLoop.run { () -> Int in
      try co_await(CoFuture<Int>.reduce(0..<count, 0) { sum, element in fulfilled(sum + element) })
    }
    #expect(sum == count * (count - 1) / 2)
  }

  @Test func aFoldOfCoroutines() throws {
    let total = try CoroutineLoop.run { () -> Int in
      try co_await(
        CoFuture<Int>.reduce([3, 4], 1) { product, factor in
          co_launch { () -> Int in
            try co_delay(0.001)
            return product * factor
          }
        })
    }
    #expect(total == 12)
  }

  // MARK: doc-comment samples

  @Test func theReduceSample() {
    let items = ["tea", "cake"]
    let price = { (item: String) in fulfilled(item.count) }
    let total = CoFuture.reduce(items, 0) { sum, item in price(item).map { sum + $0 } }
    #expect(value(total.result) == 7)
  }
}
