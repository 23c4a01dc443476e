import Dispatch
import Testing

@testable import Coroutines

/// The inline generator's driving handshake: a `next()` whose producer only yields takes no
/// lock, and remembers where the producer's jobs and timers go only while the consumer stays
/// the same. These check the cases that shortcut could get wrong.
@Suite struct InlineDriverTests {
  @Test func aGeneratorFollowsItsConsumerFromOneTestLoopToAnother() {
    let first = CoroutineTestLoop()
    let second = CoroutineTestLoop()
    let ticks = co_sequence { (yield: CoYield<Int>) in
      for tick in 1...4 {
        try co_delay(10)
        try yield(tick)
      }
    }
    let received = ModelsLog<String>()
    co_launch(on: first) {
      for _ in 0..<2 { received.append("first \(ticks.next() ?? 0)") }
    }
    first.advance(by: 20)
    #expect(received.values == ["first 1", "first 2"])
    // The same generator, now asked by a coroutine on another loop: its delays must run on
    // the new consumer's clock, not on the one it remembered.
    co_launch(on: second) {
      for _ in 0..<2 { received.append("second \(ticks.next() ?? 0)") }
    }
    second.runUntilIdle()
    #expect(second.pendingTimers == 1)
    #expect(first.pendingTimers == 0)
    second.advance(by: 20)
    #expect(received.values == ["first 1", "first 2", "second 3", "second 4"])
    #expect(first.liveCoroutines == 0 && second.liveCoroutines == 0)
  }

  @Test func coroutinesLaunchedByTheBodyAllRunAfterTheirConsumerLeaves() throws {
    let launched = ModelsCounter()
    let ran = ModelsCounter()
    try CoroutineLoop.run {
      let numbers = co_sequence { (yield: CoYield<Int>) in
        for n in 0..<500 {
          // Queued while the consumer drives; handed to the consumer's loop as it leaves.
          co_launch { ran.increment() }
          launched.increment()
          try yield(n)
        }
      }
      var sum = 0
      for n in numbers { sum += n }
      #expect(sum == 499 * 500 / 2)
    }
    #expect(launched.value == 500)
    #expect(ran.value == 500)
  }

  @Test func wakeUpsFromAnotherThreadAreNeverLostWhileConsumersComeAndGo() {
    let other = DispatchQueue(label: "inline-driver.other")
    let rounds = 2_000
    let numbers = co_sequence { (yield: CoYield<Int>) in
      for n in 0..<rounds {
        let answer = CoPromise<Int>()
        other.async { answer.fulfill(n) }
        try yield(try co_await(answer))
      }
    }
    var expected = 0
    // Plain code and coroutines take turns as consumers, so the wake-ups land both while a
    // consumer blocks and while one suspends.
    while expected < rounds {
      if expected % 2 == 0 {
        #expect(numbers.next() == expected)
      } else {
        let value = try? CoroutineLoop.run { numbers.next() }
        #expect(value == expected)
      }
      expected += 1
    }
    #expect(numbers.next() == nil)
  }
}
