import Dispatch
import Synchronization
import Testing

@testable import Coroutines

/// `CoSemaphore`: never more permits out than its value, waiters served in order, and a permit
/// handed to a waiter that is leaving goes to the next one.
@Suite struct CoSemaphoreTests {
  @Test func permitsOutNeverExceedTheValue() throws {
    let semaphore = CoSemaphore(value: 3)
    let occupancy = Occupancy()
    try CoroutineLoop.run {
      let tasks = (0..<40).map { index in
        co_launch(on: index % 2 == 0 ? DispatchQueue.global() : nil) {
          for _ in 0..<SyncStress.count(500) {
            try semaphore.withPermit {
              occupancy.enter()
              defer { occupancy.leave() }
              try co_delay(0)
            }
          }
        }
      }
      for task in tasks { try co_await(task) }
    }
    #expect(occupancy.highWaterMark <= 3)
    #expect(occupancy.highWaterMark >= 1)
    #expect(semaphore.available == 3)
  }

  @Test func waitersTakePermitsInTheOrderTheyCame() throws {
    let order = Guarded<[Int]>([])
    try CoroutineLoop.run {
      let semaphore = CoSemaphore(value: 0)
      let waiters = (0..<8).map { index in
        co_launch {
          try semaphore.wait()
          order.value.append(index)
        }
      }
      try co_delay(0)
      for _ in 0..<8 { semaphore.signal() }
      #expect(!semaphore.tryWait())  // every signal went to a waiter, none to the pool
      for waiter in waiters { try co_await(waiter) }
    }
    #expect(order.value == Array(0..<8))
  }

  /// A waiter cancelled as the permit is handed to it (its wait has ended, but it is still
  /// first in the queue), or just after (granted, but it has not run since): either way its
  /// wait throws and the permit goes to the next waiter.
  @Test(arguments: [true, false])
  func aPermitHandedToAWaiterCancelledAsOrAfterItCameGoesToTheNext(cancelledFirst: Bool) throws {
    try CoroutineLoop.run {
      let semaphore = CoSemaphore(value: 0)
      let cancelled = co_launch {
        try semaphore.wait()
        semaphore.signal()  // had it kept the permit, the next waiter would wait for ever
      }
      let next = co_launch { try semaphore.wait() }
      try co_delay(0)
      if cancelledFirst {
        cancelled.cancel()
        semaphore.signal()
      } else {
        semaphore.signal()
        cancelled.cancel()
      }
      #expect(throws: CancellationError.self) { try co_await(cancelled) }
      try co_await(next)
      #expect(semaphore.available == 0)
    }
  }

  @Test func aWaitTimesOutOnTheSchedulersClockAndTakesNothing() {
    let loop = CoroutineTestLoop()
    let semaphore = CoSemaphore(value: 0)
    let waiter = co_launch(on: loop) { try semaphore.wait(timeout: 5) }
    loop.advance(by: 4.9)
    #expect(waiter.result == nil)
    loop.advance(by: 0.2)
    #expect(throws: CoroutineError.timedOut) { try waiter.result?.get() }
    semaphore.signal()
    #expect(semaphore.available == 1)
  }

  /// Signals from plain threads race timeouts of waiters on another queue; every permit ends
  /// up either taken by exactly one waiter or back in the pool.
  @Test func permitsRacingTimeoutsAreNeitherLostNorDuplicated() throws {
    let rounds = SyncStress.count(20_000)
    let semaphore = CoSemaphore(value: 0)
    let taken = Atomic<Int>(0)
    let queue = DispatchQueue(label: "CoSemaphoreTests.waiters")
    try CoroutineLoop.run {
      let waiter = co_launch(on: queue) {
        for _ in 0..<rounds {
          do {
            try semaphore.wait(timeout: 0)
            taken.add(1, ordering: .relaxed)
          } catch CoroutineError.timedOut {}
        }
      }
      for _ in 0..<rounds {
        semaphore.signal()
        try co_delay(0)
      }
      try co_await(waiter)
    }
    #expect(taken.load(ordering: .relaxed) + semaphore.available == rounds)
  }

  @Test func waitingOutsideACoroutineThrowsNotInCoroutine() {
    let semaphore = CoSemaphore(value: 1)
    #expect(throws: CoroutineError.notInCoroutine) { try semaphore.wait() }
    #expect(throws: CoroutineError.notInCoroutine) { try semaphore.withPermit {} }
    #expect(semaphore.tryWait())
  }
}
