import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// A loop about to sleep, or about to park a coroutine and be left idle, first spins for a
/// while, watching for other threads' work and for the coroutine's wake-up; these check that
/// the spin never costs correctness: timers fire on time, every cross-thread wake-up is seen
/// whether it lands while the loop spins or sleeps, an idle loop ends, and in a group at most
/// half the loops spin at once.
@Suite struct LoopSpinTests {
  static let longBudget: UInt64 = 60_000_000_000

  /// Runs `body` on a loop whose spin budget is a minute, far longer than the test may take,
  /// and checks that the run took less than half of that: a spin that ignored what it must give
  /// way to would last the whole budget.
  static func runWithLongSpinBudget<T>(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: @escaping () throws -> T
  ) throws -> T {
    let clock = ContinuousClock()
    let started = clock.now
    let result = try CoroutineLoop.run { () throws -> T in
      CoroutineLoop.current!.setSpinBudgetForTesting(longBudget)
      return try body()
    }
    #expect(clock.now - started < .seconds(30), sourceLocation: sourceLocation)
    return result
  }

  /// Awaits `promise` in the calling coroutine while a plain thread runs `answer` once the
  /// await has begun (its first look at the outcome marks the promise observed); returns the
  /// outcome and the switches into the coroutine during the await.
  static func awaitWhileSpinning<T: Sendable>(
    _ promise: CoPromise<T>, answer: @escaping @Sendable () -> Void
  ) -> (outcome: Result<T, any Error>, switches: UInt64) {
    let coroutine = Coroutine.current!
    PlainThreads.start {
      _ = PlainThreads.poll { promise.wasObserved }
      answer()
    }
    let before = coroutine.registryEntry.switches.load(ordering: .relaxed)
    let outcome = Result { try co_await(promise) }
    return (outcome, coroutine.registryEntry.switches.load(ordering: .relaxed) &- before)
  }

  @Test func anAnswerFromAPlainThreadReachesAnAwaitWhileItsLoopSpins() throws {
    let promise = CoPromise<Int>()
    let (outcome, switches) = try Self.runWithLongSpinBudget {
      Self.awaitWhileSpinning(promise) { promise.fulfill(42) }
    }
    #expect(try outcome.get() == 42)
    // Woken while it spun on its own stack, before it parked: never switched out.
    #expect(switches == 0)
  }

  @Test func workFromAnotherThreadEndsTheSpin() throws {
    let (outcome, switches) = try Self.runWithLongSpinBudget {
      let loop = CoroutineLoop.current!
      let promise = CoPromise<Int>()
      // The answer comes from a coroutine that the other thread queues on this loop: only
      // once the spin gives way does it run.
      return Self.awaitWhileSpinning(promise) {
        _ = co_launch(on: loop) { promise.fulfill(9) }
      }
    }
    #expect(try outcome.get() == 9)
    #expect(switches == 1)
  }

  @Test func cancellingAnAwaitWhileItsLoopSpinsEndsIt() throws {
    let never = CoPromise<Int>()
    let outcome = try Self.runWithLongSpinBudget { () -> String in
      let waiter = co_launch { try co_await(never) }
      PlainThreads.start {
        _ = PlainThreads.poll { never.wasObserved }
        waiter.cancel()
      }
      return try PlainThreads.valueOrCancelled(of: waiter)
    }
    #expect(outcome == "cancelled")
  }

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

  /// Every loop of a group is given a long spin budget and left idle, then woken with work
  /// again and again: at most half the loops (at least one) may spin at once, and the others
  /// sleep. Counted by the group, not timed.
  @Test(arguments: [2, 3, 4])
  func aGroupLetsAtMostHalfItsLoopsSpin(threads: Int) throws {
    let group = CoroutineLoopGroup(threads: threads)
    let slots = max(1, threads / 2)
    func onEveryLoop(_ body: @escaping @Sendable () -> Void) throws {
      for loop in group.loops { try PlainThreads.value(of: co_launch(on: loop) { body() }) }
    }
    // Each loop, once this job is done, has nothing to run and tries to spin.
    try onEveryLoop { CoroutineLoop.current!.setSpinBudgetForTesting(Self.longBudget) }
    let filled = PlainThreads.poll { group.spinningLoops.load(ordering: .relaxed) == slots }
    #expect(filled)
    // Woken by work, each loop runs it and tries to spin again; those without a slot sleep.
    for _ in 0..<5 { try onEveryLoop {} }
    #expect(group.mostSpinningLoops.load(ordering: .relaxed) == slots)
    // Ends the spins, which would otherwise hold the shutdown for the whole budget.
    try onEveryLoop { CoroutineLoop.current!.setSpinBudgetForTesting(0) }
    group.shutdown()
    #expect(group.spinningLoops.load(ordering: .relaxed) == 0)
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
