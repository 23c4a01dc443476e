import Synchronization
import Testing

@testable import Coroutines

@Suite struct FutureCollectionTests {
  /// Promises made on demand, one per element, that the test settles by hand.
  final class Work: @unchecked Sendable {  // behind `mutex`
    private let mutex = Mutex<Void>(())
    private var made: [Int: CoPromise<Int>] = [:]
    private var running = 0
    private(set) var mostAtOnce = 0

    func make(_ element: Int) -> CoFuture<Int> {
      let promise = CoPromise<Int>()
      mutex.withLock { _ in
        made[element] = promise
        running += 1
        mostAtOnce = max(mostAtOnce, running)
      }
      promise.whenSettled { _ in self.mutex.withLock { _ in self.running -= 1 } }
      return promise
    }

    var started: [Int] { mutex.withLock { _ in made.keys.sorted() } }
    func promise(_ element: Int) -> CoPromise<Int> { mutex.withLock { _ in made[element]! } }
  }

  @Test func allWithALimitRunsAtMostThatManyAtOnce() {
    let work = Work()
    let results = CoFuture<Int>.all(0..<6, limit: 2) { work.make($0) }
    #expect(work.started == [0, 1])
    work.promise(1).fulfill(10)
    #expect(work.started == [0, 1, 2])
    work.promise(0).fulfill(0)
    work.promise(2).fulfill(20)
    #expect(work.started == [0, 1, 2, 3, 4])
    for element in 3..<6 { work.promise(element).fulfill(element * 10) }
    #expect(value(results.result) == [0, 10, 20, 30, 40, 50])
    #expect(work.mostAtOnce == 2)
  }

  @Test func allWithALimitFailsFastStopsStartingAndCancelsTheRunning() {
    let work = Work()
    let results = CoFuture<Int>.all(0..<5, limit: 2) { work.make($0) }
    work.promise(0).reject(Failure.first)
    #expect(failure(results.result) == .first)
    #expect(isCancellation(work.promise(1).result))
    #expect(work.started == [0, 1])
  }

  @Test func allWithALimitRejectsWithWhatMakeThrows() {
    let results = CoFuture<Int>.all([1, 2, 3], limit: 1) { element -> CoFuture<Int> in
      if element == 2 { throw Failure.second }
      return fulfilled(element)
    }
    #expect(failure(results.result) == .second)
  }

  @Test func cancellingAllWithALimitCancelsTheRunningAndStartsNoMore() {
    let work = Work()
    let results = CoFuture<Int>.all(0..<4, limit: 2) { work.make($0) }
    results.cancel()
    #expect(isCancellation(work.promise(0).result))
    #expect(isCancellation(work.promise(1).result))
    #expect(work.started == [0, 1])
  }

  @Test func allOverManySettledFuturesDoesNotRecurse() throws {
    // Each future is settled when made; a recursive pump would overflow a coroutine's stack.
    let count = 20_000
    let sum = try CoroutineLoop.run { () -> Int in
      try co_await(CoFuture<Int>.all(0..<count, limit: 3) { fulfilled($0) }).reduce(0, +)
    }
    #expect(sum == count * (count - 1) / 2)
  }

  @Test func allOverAnEmptyCollection() {
    #expect(value(CoFuture<Int>.all([Int](), limit: 2) { fulfilled($0) }.result) == [])
  }

  @Test func allWithALimitOnASchedulerMakesWorkThere() {
    let scheduler = CoroutineTestLoop()
    let work = Work()
    let results = CoFuture<Int>.all(0..<2, on: scheduler) { work.make($0) }
    #expect(work.started == [])
    scheduler.runUntilIdle()
    #expect(work.started == [0, 1])
    work.promise(0).fulfill(0)
    work.promise(1).fulfill(1)
    scheduler.runUntilIdle()
    #expect(value(results.result) == [0, 1])
  }

  @Test func mappingInParallelWithCoroutines() throws {
    let size = TestStacks.uniqueSize()
    let lengths = try CoroutineLoop.run { () -> [Int] in
      let words = ["one", "three", "seven"]
      return try co_await(
        CoFuture.all(words, limit: 2) { word in
          co_launch(stackSize: size) { () -> Int in
            try co_delay(0.001)
            return word.count
          }
        })
    }
    #expect(lengths == [3, 5, 5])
    #expect(TestStacks.allReturned(size: size))
  }

  // MARK: series

  @Test func seriesStartsEachAfterThePreviousIsFulfilled() {
    let work = Work()
    let results = CoFuture<Int>.series([5, 6, 7]) { work.make($0) }
    #expect(work.started == [5])
    work.promise(5).fulfill(50)
    #expect(work.started == [5, 6])
    work.promise(6).fulfill(60)
    work.promise(7).fulfill(70)
    #expect(value(results.result) == [50, 60, 70])
    #expect(work.mostAtOnce == 1)
  }

  @Test func seriesStopsAtTheFirstError() {
    let work = Work()
    let results = CoFuture<Int>.series([1, 2, 3]) { work.make($0) }
    work.promise(1).reject(Failure.first)
    #expect(failure(results.result) == .first)
    #expect(work.started == [1])
  }

  @Test func cancellingASeriesCancelsTheCurrentStep() {
    let work = Work()
    let results = CoFuture<Int>.series([1, 2]) { work.make($0) }
    results.cancel()
    #expect(isCancellation(work.promise(1).result))
    #expect(work.started == [1])
  }

  // MARK: reduce

  @Test func reduceFoldsInInputOrder() {
    let promises = (0..<3).map { _ in CoPromise<String>() }
    let joined = CoFuture.reduce(promises, "") { $0 + $1 }
    promises[2].fulfill("c")
    promises[0].fulfill("a")
    promises[1].fulfill("b")
    #expect(value(joined.result) == "abc")
  }

  @Test func reduceFailsFast() {
    let promises = (0..<2).map { _ in CoPromise<Int>() }
    let total = CoFuture.reduce(promises, 0, +)
    promises[1].reject(Failure.second)
    #expect(failure(total.result) == .second)
    #expect(isCancellation(promises[0].result))
  }

  @Test func reduceRejectsWithWhatCombineThrows() {
    let total = CoFuture.reduce([fulfilled(1)], 0) { _, _ in throw Failure.third }
    #expect(failure(total.result) == .third)
  }

  @Test func cancellingAReduceCancelsItsInputs() {
    let promise = CoPromise<Int>()
    let total = CoFuture.reduce([promise], 0, +)
    total.cancel()
    #expect(isCancellation(promise.result))
  }

  @Test func reduceOfPrices() {
    let prices = [fulfilled(3), fulfilled(4)]
    let total = CoFuture.reduce(prices, 0) { sum, price in sum + price }
    #expect(value(total.result) == 7)
  }

  // MARK: doc-comment samples

  @Test func theLimitAndSeriesSamples() {
    let urls = ["/a", "/bb", "/ccc"]
    let orders = [7, 8]
    let fetchPage = { (url: String) in fulfilled(url.count) }
    let submit = { (order: Int) in fulfilled("receipt \(order)") }
    let pages = CoFuture.all(urls, limit: 4) { url in fetchPage(url) }
    let receipts = CoFuture.series(orders) { order in submit(order) }
    #expect(value(pages.result) == [2, 3, 4])
    #expect(value(receipts.result) == ["receipt 7", "receipt 8"])
  }
}
