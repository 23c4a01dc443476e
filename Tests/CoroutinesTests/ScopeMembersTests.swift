import Testing

@testable import Coroutines

@Suite struct ScopeMembersTests {
  @Test func aScopeCancelsAGenerator() throws {
    let unwound = Counter()
    let scope = CoScope()
    let numbers = scope.add(
      co_sequence { (yield: CoYield<Int>) in
        defer { unwound.increment() }
        var next = 0
        while true {
          try yield(next)
          next += 1
        }
      })
    #expect(numbers.next() == 0)
    #expect(numbers.next() == 1)
    scope.cancel()
    #expect(unwound.value == 1)
    #expect(numbers.next() == nil)
    #expect(numbers.isFinished)
  }

  @Test func aScopeClosesAChannel() throws {
    let outcome = try CoroutineLoop.run { () -> [String] in
      let scope = CoScope()
      let channel = scope.add(CoChannel<Int>(capacity: 4))
      try channel.send(1)
      let receiver = co_launch { () -> [String] in
        var seen: [String] = []
        do {
          while true { seen.append("\(try channel.receive())") }
        } catch {
          seen.append("\(error)")
        }
        return seen
      }
      scope.cancel()
      #expect(channel.isClosed)
      return try co_await(receiver)
    }
    #expect(outcome == ["1", "\(CoroutineError.channelClosed)"])
  }

  @Test func aScopeStopsAnActor() throws {
    let (before, after) = try CoroutineLoop.run { () -> (Int, CoroutineError?) in
      let scope = CoScope()
      let doubler = scope.add(
        co_actor { (mailbox: CoMailbox<Int, Int>) in
          for message in mailbox { message.reply(message.value * 2) }
        })
      let before = try co_await(doubler.send(21))
      scope.cancel()
      do {
        _ = try co_await(doubler.send(1))
        return (before, nil)
      } catch let error as CoroutineError {
        return (before, error)
      }
    }
    #expect(before == 42)
    #expect(after == .actorStopped)
  }

  @Test func closedChannelsStoppedActorsAndFinishedGeneratorsLeaveTheScope() {
    let loop = CoroutineTestLoop()
    let scope = CoScope()
    let channel = scope.add(CoChannel<Int>())
    let actor = scope.add(
      co_actor(on: loop) { (mailbox: CoMailbox<Int, Int>) in
        for message in mailbox { message.reply(message.value) }
      })
    let numbers = scope.add(co_sequence { (yield: CoYield<Int>) in try yield(1) })
    #expect(scope.count == 3)
    channel.close()
    #expect(scope.count == 2)
    actor.stop()
    loop.runUntilIdle()
    #expect(scope.count == 1)
    #expect(Array(numbers) == [1])
    #expect(scope.count == 0)
    scope.cancel()
  }

  @Test func aMillionShortLivedChannelsActorsAndGeneratorsKeepTheScopeSmall() {
    let loop = CoroutineTestLoop()
    let scope = CoScope()
    let kept = scope.add(CoChannel<Int>())
    var largest = 0
    for index in 0..<1_000_000 {
      switch index % 100 {
      case 0:
        scope.add(co_actor(on: loop) { (mailbox: CoMailbox<Int, Int>) in for _ in mailbox {} })
        loop.runUntilIdle()
      case 1:
        let numbers = scope.add(co_sequence { (yield: CoYield<Int>) in try yield(index) })
        _ = numbers.next()
      default:
        scope.add(CoChannel<Int>(capacity: 1))
      }
      largest = max(largest, scope.storedCount)
    }
    #expect(largest <= 64)
    #expect(scope.count == 1)
    scope.cancel()
    #expect(kept.isClosed)
  }

  @Test func channelsAndActorsAreHeldWeakly() {
    let scope = CoScope()
    weak var weakChannel: CoChannel<Int>?
    do {
      let channel = CoChannel<Int>()
      weakChannel = channel
      scope.add(channel)
    }
    #expect(weakChannel == nil)
    scope.cancel()
  }
}

/// Actors and scheduled generators live as long as their handle, not as long as the coroutine
/// that made them: a coroutine that returns one must not wait for it to end.
@Suite struct HandedOutModelsTests {
  @Test func aCoroutineThatReturnsAnActorSettles() {
    let loop = CoroutineTestLoop()
    let maker = co_launch(on: loop) { () -> CoActor<Int, Int> in
      co_actor { (mailbox: CoMailbox<Int, Int>) in
        for message in mailbox { message.reply(message.value + 1) }
      }
    }
    loop.runUntilIdle()
    #expect(maker.isSettled)
    let actor = value(maker.result)
    let reply = actor?.send(1)
    loop.runUntilIdle()
    #expect(value(reply?.result) == 2)
    actor?.stop()
    loop.runUntilIdle()
    #expect(actor?.isFinished == true)
  }

  @Test func aCoroutineThatReturnsAScheduledGeneratorSettles() {
    let loop = CoroutineTestLoop()
    let maker = co_launch(on: loop) { () -> CoGenerator<Int> in
      let numbers = co_sequence(on: loop) { (yield: CoYield<Int>) in
        try yield(1)
        try yield(2)
      }
      #expect(numbers.next() == 1)
      return numbers
    }
    loop.runUntilIdle()
    #expect(maker.isSettled)
    value(maker.result)?.cancel()
    loop.runUntilIdle()
    #expect(loop.liveCoroutines == 0)
  }
}
