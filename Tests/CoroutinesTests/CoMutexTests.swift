import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// `CoMutex`: mutual exclusion under stress on a loop, on dispatch queues and on both at once;
/// first come, first served; waiters that time out or are cancelled while the mutex is handed
/// over take nothing and lose nothing.
@Suite struct CoMutexTests {
  /// Increments `counter` `perCoroutine` times, one lock and unlock per increment, with a
  /// suspension inside every `yieldEvery`-th hold so that other coroutines queue for it even on
  /// one thread.
  static func increment(
    _ counter: Guarded<Int>, with mutex: CoMutex, times perCoroutine: Int, yieldEvery: Int
  ) throws {
    for step in 0..<perCoroutine {
      try mutex.lock()
      let seen = counter.value
      if step % yieldEvery == 0 { try co_delay(0) }
      counter.value = seen + 1
      mutex.unlock()
    }
  }

  /// `total` increments, split between `coroutines` coroutines placed by `scheduler(index)`
  /// (nil: the loop that runs the test).
  static func increments(
    _ total: Int, coroutines: Int, scheduler: @escaping (Int) -> (any CoroutineScheduler)?
  ) throws -> (counter: Int, expected: Int) {
    let perCoroutine = SyncStress.count(total) / coroutines
    let mutex = CoMutex()
    let counter = Guarded(0)
    try CoroutineLoop.run {
      let tasks = (0..<coroutines).map { index in
        co_launch(on: scheduler(index)) {
          try increment(counter, with: mutex, times: perCoroutine, yieldEvery: 64)
        }
      }
      for task in tasks { try co_await(task) }
    }
    return (counter.value, perCoroutine * coroutines)
  }

  @Test func aMillionIncrementsOnOneLoopAreExact() throws {
    let result = try Self.increments(1_000_000, coroutines: 100) { _ in nil }
    #expect(result.counter == result.expected)
  }

  @Test func aMillionIncrementsOnTheGlobalQueueAreExact() throws {
    let result = try Self.increments(1_000_000, coroutines: 100) { _ in DispatchQueue.global() }
    #expect(result.counter == result.expected)
  }

  /// A quarter of a million: with waiters on both sides nearly every unlock wakes the other
  /// thread (a futex wake-up and a sleep each, about 8 µs here), so a million took 8 s or more.
  @Test func aQuarterMillionIncrementsOnALoopAndTheGlobalQueueAtOnceAreExact() throws {
    let result = try Self.increments(250_000, coroutines: 100) { index in
      index % 2 == 0 ? DispatchQueue.global() : nil
    }
    #expect(result.counter == result.expected)
  }

  @Test func waitersGetTheMutexInTheOrderTheyCame() throws {
    let order = Guarded<[Int]>([])
    try CoroutineLoop.run {
      let mutex = CoMutex()
      try mutex.lock()
      let waiters = (0..<10).map { index in
        co_launch {
          try mutex.withLock { order.value.append(index) }
        }
      }
      try co_delay(0)  // every waiter is queued now
      mutex.unlock()
      // Handed over: the unlocking coroutine cannot take it back ahead of the queue.
      #expect(!mutex.tryLock())
      for waiter in waiters { try co_await(waiter) }
      #expect(mutex.tryLock())
      mutex.unlock()
    }
    #expect(order.value == Array(0..<10))
  }

  @Test func aWaiterThatTimesOutLeavesTheQueueAndTheNextGetsTheMutex() throws {
    let loop = CoroutineTestLoop()
    let mutex = CoMutex()
    let holder = co_launch(on: loop) {
      try mutex.lock()
      try co_delay(10)
      mutex.unlock()
    }
    let impatient = co_launch(on: loop) { try mutex.lock(timeout: 1) }
    let patient = co_launch(on: loop) { () -> Bool in
      try mutex.lock()
      defer { mutex.unlock() }
      return true
    }
    loop.advance(by: 2)
    #expect(throws: CoroutineError.timedOut) { try impatient.result?.get() }
    #expect(patient.result == nil)
    loop.advance(by: 10)
    #expect(holder.result != nil)
    #expect(try patient.result?.get() == true)
  }

  /// A waiter cancelled as the mutex is handed to it (first in the queue, its wait ended, not
  /// run yet: the claim fails), or just after (it holds the mutex, but has not run since):
  /// either way its lock() throws and the mutex goes on to the next waiter.
  @Test(arguments: [true, false])
  func aWaiterCancelledAsOrAfterTheMutexIsHandedToItPassesItOn(cancelledFirst: Bool) throws {
    try CoroutineLoop.run {
      let mutex = CoMutex()
      try mutex.lock()
      let cancelled = co_launch {
        try mutex.lock()
        mutex.unlock()  // had it kept the mutex, the next waiter would wait for ever
      }
      let next = co_launch { () -> Int in
        try mutex.lock()
        mutex.unlock()
        return 7
      }
      try co_delay(0)  // both queued
      if cancelledFirst {
        cancelled.cancel()
        mutex.unlock()
      } else {
        mutex.unlock()
        cancelled.cancel()
      }
      #expect(throws: CancellationError.self) { try co_await(cancelled) }
      #expect(try co_await(next) == 7)
      #expect(mutex.tryLock())
      mutex.unlock()
    }
  }

  /// 100 000 rounds (half with cancellation, half with a timeout) in which a waiter on another
  /// thread gives up while the holder unlocks: either it gets the mutex or it throws, never
  /// both, never two holders, and the mutex is never left locked with nobody holding it.
  @Test func waitersGivingUpWhileTheMutexIsHandedOverLoseAndDoubleNothing() throws {
    let rounds = SyncStress.count(100_000)
    let occupancy = Occupancy()
    let acquired = Atomic<Int>(0)
    let gaveUp = Atomic<Int>(0)
    var neverStarted = 0  // cancelled before its coroutine ran
    let mutex = CoMutex()
    let waiters = DispatchQueue(label: "CoMutexTests.waiters")
    let cancellers = DispatchQueue(label: "CoMutexTests.cancellers")
    try CoroutineLoop.run {
      try mutex.lock()
      occupancy.enter()
      for round in 0..<rounds {
        let byTimeout = round % 2 == 1
        let waiter = co_launch(on: waiters) {
          do {
            try mutex.lock(timeout: byTimeout ? 0 : nil)
          } catch {
            gaveUp.add(1, ordering: .relaxed)
            return
          }
          occupancy.enter()
          acquired.add(1, ordering: .relaxed)
          occupancy.leave()
          mutex.unlock()
        }
        if !byTimeout { cancellers.async { waiter.cancel() } }
        occupancy.leave()
        mutex.unlock()  // races with the timeout or the cancellation
        if case .failure(CoroutineError.cancelledBeforeStart) = Result(catching: {
          try co_await(waiter)
        }) {
          neverStarted += 1
        }
        try mutex.lock(timeout: 10)  // a lost hand-over would leave it locked: a timeout here
        occupancy.enter()
      }
      occupancy.leave()
      mutex.unlock()
    }
    let ended = acquired.load(ordering: .relaxed) + gaveUp.load(ordering: .relaxed)
    #expect(ended + neverStarted == rounds)
    #expect(acquired.load(ordering: .relaxed) > 0 && gaveUp.load(ordering: .relaxed) > 0)
    #expect(occupancy.highWaterMark == 1)
    #expect(mutex.tryLock())
  }

  @Test func withLockUnlocksWhenTheBodyThrowsOrTheCoroutineIsCancelled() throws {
    struct Failure: Error {}
    try CoroutineLoop.run {
      let mutex = CoMutex()
      #expect(throws: Failure.self) { try mutex.withLock { throw Failure() } }
      #expect(mutex.tryLock())
      mutex.unlock()
      let started = CoPromise<Void>()
      let holder = co_launch {
        try mutex.withLock {
          started.fulfill(())
          try co_delay(60)  // cancelled here, inside the lock
        }
      }
      try co_await(started)
      holder.cancel()
      #expect(throws: CancellationError.self) { try co_await(holder) }
      #expect(mutex.tryLock())
      mutex.unlock()
    }
  }

  @Test func coroutinesOnSharedStacksWaitTimeOutAndHandOverLikeTheRest() throws {
    let order = Guarded<[Int]>([])
    try CoroutineLoop.run {
      let mutex = CoMutex()
      try mutex.lock()
      let waiters = (0..<6).map { index in
        co_launch(stack: .shared) { () -> Bool in
          do {
            try mutex.lock(timeout: index == 2 ? 0 : nil)
          } catch CoroutineError.timedOut {
            return false
          }
          order.value.append(index)
          try co_delay(0)  // parked on its shared stack while holding the mutex
          mutex.unlock()
          return true
        }
      }
      try co_delay(0.01)  // all queued; the one with no time to wait has given up
      mutex.unlock()
      let got = try waiters.map { try co_await($0) }
      #expect(got == [true, true, false, true, true, true])
    }
    #expect(order.value == [0, 1, 3, 4, 5])
  }

  @Test func lockingOutsideACoroutineThrowsNotInCoroutine() {
    let mutex = CoMutex()
    #expect(throws: CoroutineError.notInCoroutine) { try mutex.lock() }
    #expect(throws: CoroutineError.notInCoroutine) { try mutex.withLock {} }
    #expect(mutex.tryLock())  // does not wait: the thread holds it
    mutex.unlock()
  }

  @Test func aCancelledCoroutineStillTakesAFreeMutexButDoesNotWaitForAHeldOne() throws {
    try CoroutineLoop.run {
      let mutex = CoMutex()
      let task = co_launch { () -> Bool in
        try Coroutine.requireCurrent().cancel()
        try mutex.withLock {}  // free: no suspension, so no cancellation yet
        return true
      }
      #expect(try co_await(task) == true)
      let blocked = co_launch { () -> Void in
        try Coroutine.requireCurrent().cancel()
        try mutex.lock()
      }
      try mutex.lock()
      #expect(throws: CancellationError.self) { try co_await(blocked) }
      mutex.unlock()
    }
  }
}
