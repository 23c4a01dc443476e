import Dispatch
import Synchronization
import Testing

@testable import Coroutines

/// The samples of Docs/Coroutines.docc/Articles/Testing.md.
@Suite struct TestingArticleTests {

  @Test func aRequestTimesOutAfterThirtySeconds() throws {
    let loop = CoroutineTestLoop()
    let reply = CoPromise<String>()  // the server never answers
    let status = co_launch(on: loop) { try fetchStatus(reply, timeout: 30) }

    loop.advance(by: 29)
    #expect(!status.isSettled)
    loop.advance(by: 1)
    #expect(throws: CoroutineError.timedOut) { try status.result?.get() }
    #expect(loop.liveCoroutines == 0)
    #expect(loop.pendingTimers == 0)
  }

  @Test func aReplyInTimeIsReturnedAndTheTimerIsCancelled() throws {
    let loop = CoroutineTestLoop()
    let reply = CoPromise<String>()
    let status = co_launch(on: loop) { try fetchStatus(reply, timeout: 30) }
    _ = loop.schedule(after: 3) { reply.fulfill("up") }
    loop.advance(by: 3)
    #expect(try status.result?.get() == "up")
    #expect(loop.liveCoroutines == 0)
    #expect(loop.pendingTimers == 0)
  }

  @Test func nothingRunsUntilTheTestDrivesTheLoop() throws {
    let loop = CoroutineTestLoop()
    let greeting = co_launch(on: loop) { "hello" }
    #expect(!greeting.isSettled)  // nothing runs until the test drives the loop
    loop.runUntilIdle()
    #expect(try greeting.result?.get() == "hello")
    #expect(loop.now == 0)
  }

  @Test func eachCoroutineWakesAtItsOwnDeadline() throws {
    let loop = CoroutineTestLoop()
    let slow = co_launch(on: loop) { () throws -> Double in
      try co_delay(5)
      return loop.now
    }
    let fast = co_launch(on: loop) { () throws -> Double in
      try co_delay(2)
      return loop.now
    }
    loop.advance(by: 10)
    #expect(try fast.result?.get() == 2)  // each coroutine woke at its own deadline
    #expect(try slow.result?.get() == 5)
    #expect(loop.now == 10)
  }

  @Test(arguments: 0..<50 as Range<UInt64>)
  func bothDepositsArrive(seed: UInt64) throws {
    let loop = CoroutineTestLoop(seed: seed)
    let account = Account()
    co_launch(on: loop) { try account.deposit(10) }
    co_launch(on: loop) { try account.deposit(20) }
    loop.runUntilIdle()
    #expect(account.balance == 30, "\(loop)")
  }

  @Test func aPromiseSettledOnAnotherThreadWakesItsCoroutineOnTheTestThread() throws {
    let loop = CoroutineTestLoop()
    let reply = CoPromise<Int>()
    let answer = co_launch(on: loop) { try co_await(reply) + 1 }
    loop.runUntilIdle()

    let group = DispatchGroup()
    DispatchQueue.global().async(group: group) { reply.fulfill(41) }
    group.wait()  // the coroutine's resumption is queued by the time `fulfill` returns
    loop.runUntilIdle()
    #expect(try answer.result?.get() == 42)
  }

  @Test func theSampleInTheDocComment() throws {
    let loop = CoroutineTestLoop()
    let task = co_launch(on: loop) { () throws -> String in
      try co_delay(30)
      return "done"
    }
    loop.advance(by: 29)
    #expect(!task.isSettled)
    loop.advance(by: 1)
    #expect(try task.result?.get() == "done")
  }

  @Test func everyItemIsConsumed() throws {
    let loop = CoroutineTestLoop()
    let items = CoChannel<Int>(capacity: 10)
    let consumer = co_launch(on: loop, name: "consumer") { () throws -> Int in
      var total = 0
      for item in items { total += item }
      return total
    }
    co_launch(on: loop, name: "producer") {
      for item in 1...3 { try items.send(item) }
      items.close()  // forgotten, the consumer would wait for ever: the check would throw
    }
    loop.runUntilIdle()
    #expect(try consumer.result?.get() == 6)
    try loop.checkForDeadlock()
  }

  @Test func aForgottenCloseMakesTheCheckThrow() throws {
    let loop = CoroutineTestLoop()
    let items = CoChannel<Int>(capacity: 10)
    let consumer = co_launch(on: loop, name: "consumer") { () throws -> Int in
      var total = 0
      for item in items { total += item }
      return total
    }
    co_launch(on: loop, name: "producer") {
      for item in 1...3 { try items.send(item) }
    }
    loop.runUntilIdle()
    let deadlock = try #require(throws: CoroutineDeadlock.self) { try loop.checkForDeadlock() }
    #expect(deadlock.description.contains("\"consumer\" [channel receive, 0.0 s]:"))
    #expect(deadlock.description.contains("everyItemIsConsumed") == false)
    #expect(deadlock.description.contains("aForgottenCloseMakesTheCheckThrow"))
    items.close()
    loop.runUntilIdle()
    #expect(try consumer.result?.get() == 6)
  }
}

/// Waits for `reply`, or fails with `CoroutineError.timedOut` after `seconds`.
func fetchStatus(_ reply: CoFuture<String>, timeout seconds: Double) throws -> String {
  let outcome = CoPromise<String>()
  let timer = co_launch {
    try co_delay(seconds)
    outcome.reject(CoroutineError.timedOut)
  }
  defer { timer.cancel() }
  reply.whenComplete { outcome.resolve($0) }
  return try co_await(outcome)
}

/// An account whose deposits suspend (say, for an audit) before they touch the balance.
final class Account {
  var balance = 0

  func deposit(_ amount: Int) throws {
    try co_delay(0)
    balance += amount
  }
}
