import Dispatch
import Synchronization
import Testing

@testable import Coroutines

/// `CoWaitGroup`: waits until the count is zero, over many coroutines and threads.
@Suite struct CoWaitGroupTests {
  @Test func aWaitGroupWaitsForTenThousandCoroutines() throws {
    let count = 10_000
    let group = CoWaitGroup()
    let finished = Atomic<Int>(0)
    let seenByWaiter = try CoroutineLoop.run { () -> Int in
      group.add(count)
      for index in 0..<count {
        co_launch(on: index % 2 == 0 ? DispatchQueue.global() : nil) {
          defer { group.done() }
          try co_delay(0.001)
          finished.add(1, ordering: .relaxed)
        }
      }
      try group.wait()
      return finished.load(ordering: .relaxed)
    }
    #expect(seenByWaiter == count)
    #expect(group.count == 0)
  }

  @Test func everyWaiterWakesAtZeroAndAWaitAtZeroReturnsAtOnce() throws {
    try CoroutineLoop.run {
      let group = CoWaitGroup()
      try group.wait()  // zero: no suspension
      group.add(2)
      let waiters = (0..<5).map { _ in co_launch { try group.wait() } }
      try co_delay(0)
      group.done()
      try co_delay(0)
      #expect(waiters.allSatisfy { $0.result == nil })
      group.done()
      for waiter in waiters { try co_await(waiter) }
    }
  }

  @Test func aWaitTimesOutAndTheGroupCarriesOn() {
    let loop = CoroutineTestLoop()
    let group = CoWaitGroup()
    group.add()
    let impatient = co_launch(on: loop) { try group.wait(timeout: 1) }
    let patient = co_launch(on: loop) { try group.wait() }
    loop.advance(by: 2)
    #expect(throws: CoroutineError.timedOut) { try impatient.result?.get() }
    #expect(patient.result == nil)
    group.done()
    loop.runUntilIdle()
    #expect(patient.result != nil)
  }

  @Test func waitingOutsideACoroutineThrowsNotInCoroutine() {
    #expect(throws: CoroutineError.notInCoroutine) { try CoWaitGroup().wait() }
  }
}
