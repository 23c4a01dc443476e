import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// A loop with nothing else to run watches the coroutine it parked last: a thread that runs no
/// loop hands that coroutine over by its state, a loop's thread takes it away as usual, and a
/// loop about to sleep ends the watch first.
@Suite struct LoopWatchTests {
  @Test func aPlainThreadHandsAWatchedCoroutineToItsSpinningLoop() throws {
    let first = CoPromise<Int>()
    let second = CoPromise<Int>()
    let sawWatched = Atomic<Bool>(false)
    let reported = Mutex<String?>(nil)
    let sum = try CoroutineLoop.run { () -> Int in
      // Far longer than the other thread needs to see the watch and hand it over.
      CoroutineLoop.current!.setSpinBudgetForTesting(100_000_000)
      // Parked by a start, then by a resumption: only the second park is watched.
      let waiter = co_launch(name: "waiter") { try co_await(first) + co_await(second) }
      PlainThreads.start {
        // Its first park comes from its start, which is never watched: settled only after it.
        _ = PlainThreads.poll { waiter.coroutine.currentState == .suspended }
        first.fulfill(1)
        sawWatched.store(
          PlainThreads.poll { waiter.coroutine.currentState == .watched }, ordering: .relaxed)
        reported.withLock { state in
          state = CoroutineDiagnostics.liveCoroutines().first { $0.name == "waiter" }?.state
        }
        second.fulfill(2)
      }
      return try co_await(waiter)
    }
    #expect(sum == 3)
    let watched = sawWatched.load(ordering: .relaxed)
    #expect(watched)
    // A dump shows a watched coroutine as what it is to its user: suspended.
    #expect(reported.withLock { $0 } == "suspended")
  }

  @Test func aLoopThatGoesToSleepEndsItsWatchAndIsStillWoken() throws {
    let first = CoPromise<Int>()
    let second = CoPromise<Int>()
    let inSecondWait = Counter()
    let sawSuspended = Atomic<Bool>(false)
    let sum = try CoroutineLoop.run { () -> Int in
      let waiter = co_launch { () -> Int in
        let one = try co_await(first)
        // The loop will spin for at most its longest spin, then end the watch and sleep.
        inSecondWait.increment()
        return try one + co_await(second)
      }
      PlainThreads.start {
        // Its first park comes from its start, which is never watched: settled only after it.
        _ = PlainThreads.poll { waiter.coroutine.currentState == .suspended }
        first.fulfill(1)
        // Watched first, then merely suspended once the loop has gone to sleep.
        sawSuspended.store(
          PlainThreads.poll {
            inSecondWait.value > 0
              && waiter.coroutine.currentState == .suspended
          },
          ordering: .relaxed)
        second.fulfill(2)
      }
      return try co_await(waiter)
    }
    #expect(sum == 3)
    let suspended = sawSuspended.load(ordering: .relaxed)
    #expect(suspended)
  }

  @Test func aCoroutineOfAnotherLoopWakesAWatchedCoroutineThroughTheQueues() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let first = CoPromise<Void>()
    let second = CoPromise<Int>()
    let parkedOn = CoPromise<CoroutineLoop>()
    let receiver = co_launch(on: group) { () -> Int in
      try co_await(first)
      // Long enough for the waker to see the watch, short enough not to hold the shutdown.
      CoroutineLoop.current!.setSpinBudgetForTesting(50_000_000)
      parkedOn.fulfill(CoroutineLoop.current!)
      return try co_await(second)
    }
    let waker = try CoroutineLoop.run { () -> CoTask<Bool> in
      // Its first park comes from its start, which is never watched: settled only after it.
      while receiver.coroutine.currentState != .suspended { try co_delay(0.001) }
      first.fulfill(())
      let parked = try co_await(parkedOn)
      let other = group.loops.first { $0 !== parked }!
      return co_launch(on: other) { () -> Bool in
        // Waits, on the other loop, until the receiver is watched by its own (10 s at most).
        var looks = 0
        while receiver.coroutine.currentState != .watched, looks < 10_000 {
          try co_delay(0.001)
          looks += 1
        }
        let watched = receiver.coroutine.currentState == .watched
        // A loop's thread takes the coroutine from the watch and queues it as usual.
        second.fulfill(7)
        return watched
      }
    }
    #expect(try PlainThreads.value(of: waker))
    #expect(try PlainThreads.value(of: receiver) == 7)
  }

  @Test func cancellingAWatchedCoroutineFromAPlainThreadEndsItsWait() throws {
    let gate = CoPromise<Void>()
    let never = CoPromise<Int>()
    let sawWatched = Atomic<Bool>(false)
    let outcome = try CoroutineLoop.run { () -> String in
      CoroutineLoop.current!.setSpinBudgetForTesting(100_000_000)
      let waiter = co_launch { () -> Int in
        try co_await(gate)
        return try co_await(never)
      }
      PlainThreads.start {
        _ = PlainThreads.poll { waiter.coroutine.currentState == .suspended }
        gate.fulfill(())
        sawWatched.store(
          PlainThreads.poll { waiter.coroutine.currentState == .watched }, ordering: .relaxed)
        waiter.cancel()
      }
      return try PlainThreads.valueOrCancelled(of: waiter)
    }
    #expect(outcome == "cancelled")
    let watched = sawWatched.load(ordering: .relaxed)
    #expect(watched)
  }
}
