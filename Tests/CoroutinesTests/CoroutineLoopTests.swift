import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

@Suite struct CoroutineLoopTests {
  @Test func runReturnsTheBodysValue() throws {
    #expect(try CoroutineLoop.run { 42 } == 42)
  }

  @Test func runGivesItsBodyTheStackSizeAskedFor() throws {
    let size = try CoroutineLoop.run(stackSize: 1 << 20) { Coroutine.current!.stackSize }
    #expect(size == 1 << 20)
  }

  @Test func runRethrowsTheBodysError() {
    struct Boom: Error, Equatable {}
    #expect(throws: Boom()) { try CoroutineLoop.run { () throws -> Int in throw Boom() } }
  }

  @Test func jobsRunInTheOrderTheyWereScheduled() throws {
    let order = try CoroutineLoop.run { () -> [Int] in
      let log = Log()
      let loop = try #require(CoroutineLoop.current)
      for index in 0..<100 { loop.schedule { log.append(index) } }
      try co_delay(0)
      return log.values
    }
    #expect(order == Array(0..<100))
  }

  @Test func timersFireInDeadlineOrder() throws {
    let order = try CoroutineLoop.run { () -> [Int] in
      let log = Log()
      let loop = try #require(CoroutineLoop.current)
      for (index, delay) in [0.03, 0.01, 0.02, 0.0].enumerated() {
        _ = loop.schedule(after: delay) { log.append(index) }
      }
      try co_delay(0.05)
      return log.values
    }
    #expect(order == [3, 1, 2, 0])
  }

  @Test func delayedCoroutinesAndTimersWakeInDeadlineOrder() throws {
    let log = Log()
    try CoroutineLoop.run {
      for (index, delay) in [0.06, 0.02, 0.04].enumerated() {
        co_launch {
          try co_delay(delay)  // a sleep in the loop's timer heap
          log.append(index)
        }
      }
      try co_delay(0)  // every sleeper has started and armed its deadline (gaps: 10 ms or more)
      _ = CoroutineLoop.current!.schedule(after: 0.03) { log.append(9) }  // a timer job among them
    }
    #expect(log.values == [1, 9, 2, 0])
  }

  @Test func aCancelledTimerNeverFiresAndDoesNotKeepTheLoopAlive() throws {
    let log = Log()
    let started = Date()
    try CoroutineLoop.run {
      let timer = CoroutineLoop.current!.schedule(after: 30) { log.append(1) }
      timer.cancel()
    }
    #expect(log.values.isEmpty)
    #expect(Date().timeIntervalSince(started) < 10)
  }

  @Test func runWaitsForEveryCoroutineOfItsLoop() throws {
    let log = Log()
    try CoroutineLoop.run {
      for index in 0..<5 {
        co_launch {
          try co_delay(0.001 * Double(5 - index))
          log.append(index)
        }
      }
    }
    #expect(log.values.sorted() == [0, 1, 2, 3, 4])
  }

  @Test func aJobFromAnotherThreadWakesASleepingLoop() throws {
    let value = try CoroutineLoop.run { () -> Int in
      let loop = CoroutineLoop.current!
      let promise = CoPromise<Int>()
      DispatchQueue.global().async { loop.schedule { promise.fulfill(5) } }
      return try co_await(promise)
    }
    #expect(value == 5)
  }

  @Test func severalThreadsRunTheirOwnLoopsAtOnce() {
    let results = Log()
    DispatchQueue.concurrentPerform(iterations: 4) { index in
      let value = try? CoroutineLoop.run { () -> Int in
        try co_delay(0.005)
        return index
      }
      results.append(value ?? -1)
    }
    #expect(results.values.sorted() == [0, 1, 2, 3])
  }

  @Test func currentIsTheLoopTheThreadRuns() throws {
    #expect(CoroutineLoop.current == nil)
    let same = try CoroutineLoop.run { () -> Bool in
      let loop = CoroutineLoop.current
      return loop != nil && loop === Coroutine.current?.home
    }
    #expect(same)
    #expect(CoroutineLoop.current == nil)
  }

  @Test func tenThousandCoroutinesDelayTogetherNotOneAfterAnother() throws {
    final class Gauge: Sendable {  // shared by the coroutines: an object, not captured lets
      let waiting = Atomic<Int>(0)
      let mostAtOnce = Atomic<Int>(0)
    }
    let gauge = Gauge()
    let started = Date()
    try CoroutineLoop.run {
      for _ in 0..<10_000 {
        co_launch {
          let now = gauge.waiting.add(1, ordering: .relaxed).newValue
          gauge.mostAtOnce.max(now, ordering: .relaxed)
          try co_delay(0.01)
          gauge.waiting.subtract(1, ordering: .relaxed)
        }
      }
    }
    // All ten thousand were waiting at the same moment, so the run took about one delay
    // (serially it would take 100 s; the bound below is generous for debug builds).
    #expect(gauge.mostAtOnce.load(ordering: .relaxed) == 10_000)
    #expect(gauge.waiting.load(ordering: .relaxed) == 0)
    #expect(Date().timeIntervalSince(started) < 20)
  }

  @Test func sleepersWakeInDeadlineOrderAndCancelledOnesNeverFire() throws {
    let log = Log()
    try CoroutineLoop.run {
      var tasks: [CoTask<Void>] = []
      // Equal delays wake in the order they slept; a shorter delay armed later (a heap entry
      // beside the in-order run) wakes before them.
      for (index, delay) in [0.02, 0.02, 0.02, 0.005, 0.02, 0.03].enumerated() {
        tasks.append(
          co_launch {
            do {
              try co_delay(delay)
              log.append(index)
            } catch is CancellationError {
              log.append(100 + index)
            }
          })
      }
      try co_delay(0)  // every sleeper has armed its deadline
      tasks[1].cancel()  // its entry stays in the heap, dead, until it surfaces
      tasks[5].cancel()
    }
    #expect(log.values == [101, 105, 3, 0, 2, 4])
  }

  /// Sleeps armed while another timer is pending get their deadlines once per turn, from a
  /// reading taken after they were armed: none ends before its delay, and all of them ring
  /// while another coroutine keeps every turn busy.
  @Test func sleepsDatedOncePerTurnNeverEndEarlyAndRingOnABusyLoop() throws {
    final class Shortest: Sendable {  // shared by the sleepers
      // Int, not UInt64: this toolchain's `Atomic<UInt64>.min` compares as signed.
      let nanoseconds = Atomic<Int>(.max)
      let rang = Atomic<Int>(0)
    }
    let shortest = Shortest()
    try CoroutineLoop.run {
      let pending = co_launch { try co_delay(600) }  // a timer pending throughout
      try co_delay(0)
      let sleepers = (0..<200).map { _ in
        co_launch {
          let start = DispatchTime.now().uptimeNanoseconds
          try co_delay(0.002)
          let slept = Int(DispatchTime.now().uptimeNanoseconds - start)
          shortest.nanoseconds.min(slept, ordering: .relaxed)
          shortest.rang.add(1, ordering: .relaxed)
        }
      }
      let busy = co_launch {
        while true { try co_delay(0) }  // a job in every turn until cancelled
      }
      for sleeper in sleepers { try co_await(sleeper) }
      busy.cancel()
      pending.cancel()
      _ = try? busy.await()
      _ = try? pending.await()
    }
    let sleptAtLeast = shortest.nanoseconds.load(ordering: .relaxed)
    let rang = shortest.rang.load(ordering: .relaxed)
    #expect(rang == 200)
    #expect(sleptAtLeast >= 2_000_000)
    #expect(sleptAtLeast < 600_000_000_000)
  }

  @Test func sleepersAreCountedOnTheLoopThreadAndTimersFromOtherThreadsKeepTheLoopAlive() throws {
    let log = Log()
    let counts = try CoroutineLoop.run { () -> [Int] in
      let loop = try #require(CoroutineLoop.current)
      var counts: [Int] = []
      var sleepers: [CoTask<Void>] = []
      for index in 0..<4 {
        sleepers.append(
          co_launch {
            do {
              try co_delay(60)  // never rings: each is cancelled below
              log.append(index)
            } catch is CancellationError {
              log.append(100 + index)
            }
          })
      }
      try co_delay(0)  // every sleeper has armed its deadline
      counts.append(loop.pendingSleepsForTesting)
      sleepers[2].cancel()  // ends early: no longer pending, its entry dead in the heap
      try co_delay(0)  // the cancelled sleeper has resumed and thrown
      counts.append(loop.pendingSleepsForTesting)
      for sleeper in sleepers { sleeper.cancel() }
      try co_delay(0)
      counts.append(loop.pendingSleepsForTesting)
      // Timers made on another thread, one of them cancelled there: they reach the heap through
      // the lock. Once this body returns, the live one is all that keeps the loop running.
      let made = CoPromise<Void>()
      DispatchQueue.global().async {
        _ = loop.schedule(after: 0.02) { log.append(7) }
        loop.schedule(after: 60) { log.append(8) }.cancel()
        made.fulfill(())
      }
      try co_await(made)
      counts.append(loop.pendingTimersForTesting)
      return counts
    }
    #expect(counts == [4, 3, 0, 1])
    #expect(log.values == [102, 100, 101, 103, 7])
  }

  @Test func moreSleepersThanOneTurnFiresWakeInTheOrderTheySlept() throws {
    let log = Log()
    let count = 3 * CoroutineLoop.timerBatch + 5
    try CoroutineLoop.run {
      for index in 0..<count {
        co_launch {
          try co_delay(0.005)
          log.append(index)
          try co_delay(0)  // a job queued after its turn: runs after every due sleeper woke
          log.append(count + index)
        }
      }
    }
    // All were due at once; they woke a batch per turn, in order, and the jobs they queued
    // waited for later turns without passing any of them.
    let values = log.values
    #expect(values.count == 2 * count)
    #expect(values.filter { $0 < count } == Array(0..<count))
    #expect(values.filter { $0 >= count } == Array(count..<(2 * count)))
  }

  @Test func theLoopPrefetchesAWholeCoroutineRecord() throws {
    let allocated = try CoroutineLoop.run {
      usableSize(Unmanaged.passUnretained(try Coroutine.requireCurrent()).toOpaque())
    }
    // The allocation holds the record (and perhaps a little slack): prefetching it covers it.
    #expect(allocated <= Coroutine.prefetchBytes)
  }
}

/// glibc's malloc_usable_size (malloc.h is not part of the Glibc module).
@_silgen_name("malloc_usable_size")
private func usableSize(_ pointer: UnsafeMutableRawPointer) -> Int
