import Testing

@testable import Coroutines

@Suite struct FutureCombinatorsTests {
  // MARK: all

  @Test func allGivesValuesInInputOrder() {
    let promises = (0..<3).map { _ in CoPromise<Int>() }
    let combined = CoFuture.all(promises)
    promises[2].fulfill(2)
    promises[0].fulfill(0)
    #expect(combined.result == nil)
    promises[1].fulfill(1)
    #expect(value(combined.result) == [0, 1, 2])
  }

  @Test func allOfNothingIsEmpty() {
    #expect(value(CoFuture<Int>.all([]).result) == [])
  }

  @Test func allFailsFastAndCancelsTheRest() {
    let promises = (0..<3).map { _ in CoPromise<Int>() }
    let combined = CoFuture.all(promises)
    promises[1].reject(Failure.second)
    #expect(failure(combined.result) == .second)
    #expect(isCancellation(promises[0].result))
    #expect(isCancellation(promises[2].result))
  }

  @Test func cancellingAllCancelsEveryInput() {
    let promises = (0..<3).map { _ in CoPromise<Int>() }
    promises[0].fulfill(0)
    let combined = CoFuture.all(promises)
    combined.cancel()
    #expect(isCancellation(combined.result))
    #expect(value(promises[0].result) == 0)
    #expect(isCancellation(promises[1].result))
    #expect(isCancellation(promises[2].result))
  }

  @Test func allOnASchedulerSettlesThere() {
    let scheduler = CoroutineTestLoop()
    let combined = CoFuture.all([fulfilled(1), fulfilled(2)], on: scheduler)
    #expect(combined.result == nil)
    scheduler.runUntilIdle()
    #expect(value(combined.result) == [1, 2])
  }

  @Test(arguments: 1...20)
  func allKeepsInputOrderWhenSettledFromManyThreads(seed: UInt64) {
    var generator = SplitMix64(seed: seed)
    let count = 16
    let promises = (0..<count).map { _ in CoPromise<Int>() }
    let combined = CoFuture.all(promises)
    let jobs: [@Sendable () -> Void] = (0..<count).map { index in
      { promises[index].fulfill(index * 10) }
    }
    runConcurrently(jobs, order: Array(0..<count).shuffled(using: &generator))
    #expect(value(combined.result) == (0..<count).map { $0 * 10 })
  }

  @Test(arguments: 1...20)
  func allRejectsWithTheFirstErrorToArrive(seed: UInt64) {
    var generator = SplitMix64(seed: seed)
    let count = 12
    let promises = (0..<count).map { _ in CoPromise<Int>() }
    let combined = CoFuture.all(promises)
    let recorder = SettleRecorder()
    let jobs: [@Sendable () -> Void] = (0..<count).map { index in
      {
        let result: Result<Int, any Error> =
          index % 3 == 0 ? .failure(Failure.attempt(index)) : .success(index)
        recorder.settle(promises[index], index: index, with: result)
      }
    }
    runConcurrently(jobs, order: Array(0..<count).shuffled(using: &generator))
    let firstFailure = recorder.settled.first { $0 % 3 == 0 }
    #expect(firstFailure != nil)
    #expect(failure(combined.result) == .attempt(firstFailure ?? -1))
  }

  // MARK: any

  @Test func anyGivesTheFirstFulfilled() {
    let promises = (0..<3).map { _ in CoPromise<Int>() }
    let first = CoFuture.any(promises)
    promises[0].reject(Failure.first)
    #expect(first.result == nil)
    promises[2].fulfill(2)
    #expect(value(first.result) == 2)
    #expect(isCancellation(promises[1].result))
  }

  @Test func anyRejectsWithEveryErrorInInputOrder() {
    let promises = (0..<3).map { _ in CoPromise<Int>() }
    let first = CoFuture.any(promises)
    promises[2].reject(Failure.third)
    promises[0].reject(Failure.first)
    promises[1].reject(Failure.second)
    guard case .failure(let error as CoAggregateError)? = first.result else {
      Issue.record("expected a CoAggregateError, got \(String(describing: first.result))")
      return
    }
    #expect(error.errors.map { $0 as? Failure } == [.first, .second, .third])
  }

  @Test func anyOfNothingRejectsAtOnce() {
    guard case .failure(let error as CoAggregateError)? = CoFuture<Int>.any([]).result else {
      Issue.record("expected an empty CoAggregateError")
      return
    }
    #expect(error.errors.isEmpty)
  }

  @Test func cancellingAnyCancelsEveryInput() {
    let promises = (0..<2).map { _ in CoPromise<Int>() }
    let first = CoFuture.any(promises)
    first.cancel()
    #expect(promises.allSatisfy { isCancellation($0.result) })
    #expect(isCancellation(first.result))
  }

  @Test(arguments: 1...20)
  func anyGivesTheFirstFulfilledFromManyThreads(seed: UInt64) {
    var generator = SplitMix64(seed: seed)
    let count = 12
    let promises = (0..<count).map { _ in CoPromise<Int>() }
    let first = CoFuture.any(promises)
    let recorder = SettleRecorder()
    let jobs: [@Sendable () -> Void] = (0..<count).map { index in
      {
        let result: Result<Int, any Error> =
          index.isMultiple(of: 2) ? .failure(Failure.attempt(index)) : .success(index)
        recorder.settle(promises[index], index: index, with: result)
      }
    }
    runConcurrently(jobs, order: Array(0..<count).shuffled(using: &generator))
    let firstFulfilled = recorder.settled.first { !$0.isMultiple(of: 2) }
    #expect(value(first.result) == firstFulfilled)
  }

  @Test(arguments: 1...10)
  func anyCollectsEveryErrorFromManyThreads(seed: UInt64) {
    var generator = SplitMix64(seed: seed)
    let count = 10
    let promises = (0..<count).map { _ in CoPromise<Int>() }
    let first = CoFuture.any(promises)
    let jobs: [@Sendable () -> Void] = (0..<count).map { index in
      { promises[index].reject(Failure.attempt(index)) }
    }
    runConcurrently(jobs, order: Array(0..<count).shuffled(using: &generator))
    guard case .failure(let error as CoAggregateError)? = first.result else {
      Issue.record("expected a CoAggregateError")
      return
    }
    #expect(error.errors.map { $0 as? Failure } == (0..<count).map { .attempt($0) })
  }

  // MARK: race

  @Test func raceGivesTheFirstToSettleEvenAnError() {
    let promises = (0..<3).map { _ in CoPromise<Int>() }
    let winner = CoFuture.race(promises)
    promises[1].reject(Failure.second)
    #expect(failure(winner.result) == .second)
    #expect(isCancellation(promises[0].result))
    #expect(isCancellation(promises[2].result))
  }

  @Test func raceOfNothingRejectsAtOnce() {
    #expect(CoFuture<Int>.race([]).result != nil)
  }

  @Test func cancellingARaceCancelsEveryInput() {
    let promises = (0..<2).map { _ in CoPromise<Int>() }
    let winner = CoFuture.race(promises)
    winner.cancel()
    #expect(promises.allSatisfy { isCancellation($0.result) })
  }

  @Test(arguments: 1...20)
  func raceGivesTheFirstToSettleFromManyThreads(seed: UInt64) {
    var generator = SplitMix64(seed: seed)
    let count = 12
    let promises = (0..<count).map { _ in CoPromise<Int>() }
    let winner = CoFuture.race(promises)
    let recorder = SettleRecorder()
    let jobs: [@Sendable () -> Void] = (0..<count).map { index in
      {
        let result: Result<Int, any Error> =
          index.isMultiple(of: 3) ? .failure(Failure.attempt(index)) : .success(index)
        recorder.settle(promises[index], index: index, with: result)
      }
    }
    runConcurrently(jobs, order: Array(0..<count).shuffled(using: &generator))
    let first = recorder.settled.first!
    // Once the race is decided the others are cancelled, so only the winner's settle counted.
    #expect(recorder.settled == [first])
    if first.isMultiple(of: 3) {
      #expect(failure(winner.result) == .attempt(first))
    } else {
      #expect(value(winner.result) == first)
    }
  }

  @Test func raceOfTasksCancelsTheLosersCoroutines() throws {
    let size = TestStacks.uniqueSize()
    let unwound = Counter()
    let winner = try CoroutineLoop.run { () -> String in
      let fast = co_launch(stackSize: size) { () -> String in
        try co_delay(0.001)
        return "fast"
      }
      let slow = co_launch(stackSize: size) { () -> String in
        defer { unwound.increment() }
        try co_await(CoPromise<Void>())
        return "slow"
      }
      return try co_await(CoFuture.race([fast, slow]))
    }
    #expect(winner == "fast")
    #expect(unwound.value == 1)
    #expect(TestStacks.allReturned(size: size))
  }

  // MARK: doc-comment samples

  @Test func theAllSample() throws {
    let urls = ["/a", "/bb"]
    let fetchPage = { (url: String) in fulfilled(url.count) }
    let sizes = try CoroutineLoop.run { () -> [Int] in
      let pages = try co_await(CoFuture.all(urls.map(fetchPage)))
      return pages
    }
    #expect(sizes == [2, 3])
  }
}
