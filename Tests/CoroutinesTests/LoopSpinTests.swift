import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// A loop about to sleep first spins for a while, watching for other threads' work; these
/// check that the spin never costs correctness: timers fire on time, every cross-thread
/// wake-up is seen whether it lands while the loop spins or sleeps, and an idle loop ends.
@Suite struct LoopSpinTests {
  @Test func aSpinningLoopStillFiresItsTimerAtTheDeadline() throws {
    let clock = ContinuousClock()
    let started = clock.now
    try CoroutineLoop.run {
      // A budget far longer than the test may take: only the timer's deadline can end the
      // spin, so a spin that ignored it would hold this test for a minute.
      CoroutineLoop.current!.setSpinBudgetForTesting(60_000_000_000)
      try co_delay(0.002)
    }
    #expect(clock.now - started < .seconds(30))
  }

  @Test func aLoopWithALongSpinBudgetStillEndsWhenIdle() throws {
    // Nothing is left to wait for once the body returns: a loop that spun anyway would hold
    // this test for a minute.
    let clock = ContinuousClock()
    let started = clock.now
    try CoroutineLoop.run {
      CoroutineLoop.current!.setSpinBudgetForTesting(60_000_000_000)
    }
    #expect(clock.now - started < .seconds(30))
  }

  @Test func crossThreadWakeUpsAreNeverLost() throws {
    // Promises settled by another thread after varying amounts of work, so that the
    // settlements land while the loop runs, spins (watching the coroutine, which the settler's
    // thread then hands over), is about to sleep (ending the watch) and sleeps. A lost wake-up
    // would hang the loop; a duplicated or misrouted one would break the sum or stop the
    // program.
    let rounds = 3_000
    let settler = DispatchQueue(label: "spin.settler")
    let sum = try CoroutineLoop.run { () -> Int in
      var sum = 0
      for round in 0..<rounds {
        let promise = CoPromise<Int>()
        let work = (round * 7919) % 4_000
        settler.async {
          var spin = 0
          for step in 0..<work { spin &+= step }
          promise.fulfill(round + (spin & 0))
        }
        sum += try co_await(promise)
      }
      return sum
    }
    #expect(sum == rounds * (rounds - 1) / 2)
  }

  @Test func channelsBetweenTwoSpinningLoopsLoseNothing() throws {
    let count = 5_000
    let pings = CoChannel<Int>()
    let pongs = CoChannel<Int>()
    let echoDone = CoPromise<Void>()
    let echo = Thread {
      do {
        try CoroutineLoop.run {
          for value in pings { try pongs.send(value + 1) }
          pongs.close()
        }
        echoDone.fulfill(())
      } catch {
        echoDone.reject(error)
      }
    }
    echo.start()
    let total = try CoroutineLoop.run { () -> Int in
      var total = 0
      for value in 0..<count {
        try pings.send(value)
        total += try pongs.receive()
      }
      pings.close()
      try co_await(echoDone)
      return total
    }
    #expect(total == count * (count + 1) / 2)
  }
}
