import Dispatch
import Synchronization
import Testing

@testable import Coroutines

@Suite struct ActorTests {
  /// An actor's body written on the main actor runs its closures on the actor's queue.
  @MainActor @Test func anActorWrittenOnTheMainActorRunsItsClosuresOnItsQueue() async throws {
    let doubler = co_actor(on: DispatchQueue(label: "ActorTests.doubler")) {
      (mailbox: CoMailbox<Int, Int>) in
      for message in mailbox { message.reply([message.value].map { $0 * 2 }[0]) }
    }
    #expect(try await doubler.send(21).value == 42)
    doubler.stop()
  }

  @Test func anActorAnswersMessagesInOrder() throws {
    let totals = try CoroutineLoop.run { () -> [Int] in
      let counter = co_actor { (mailbox: CoMailbox<Int, Int>) in
        var total = 0
        for message in mailbox {
          total += message.value
          message.reply(total)
        }
      }
      let replies = [5, 10, 20].map { counter.send($0) }
      counter.stop()
      let totals = try replies.map { try co_await($0) }
      try co_await(counter.task)
      return totals
    }
    #expect(totals == [5, 15, 35])
  }

  @Test func concurrentSendersKeepTheirOwnOrderAndNothingIsDropped() throws {
    struct Note: Sendable {
      let sender: Int
      let sequence: Int
    }
    let senders = 4
    let perSender = 2_000
    let queue = DispatchQueue(label: "actor.home")
    let marker = DispatchSpecificKey<Int>()
    queue.setSpecific(key: marker, value: 1)
    let (handled, offQueue) = try CoroutineLoop.run { () -> ([Note], Int) in
      let results = CoPromise<([Note], Int)>()
      let recorder = co_actor(on: queue) { (mailbox: CoMailbox<Note, Int>) in
        var handled: [Note] = []
        var offQueue = 0
        for message in mailbox {
          if DispatchQueue.getSpecific(key: marker) != 1 { offQueue += 1 }
          handled.append(message.value)
          message.reply(handled.count)
        }
        // The state stayed inside the actor; hand it out once the mailbox is done.
        results.fulfill((handled, offQueue))
      }
      let sending = (0..<senders).map { sender in
        co_launch(on: DispatchQueue(label: "actor.sender.\(sender)")) { () -> [Int] in
          try (0..<perSender).map { sequence in
            try co_await(recorder.send(Note(sender: sender, sequence: sequence)))
          }
        }
      }
      var replyCounts: [Int] = []
      for task in sending { replyCounts += try co_await(task) }
      #expect(Set(replyCounts) == Set(1...(senders * perSender)))
      recorder.stop()
      try co_await(recorder.task)
      return try co_await(results)
    }
    #expect(handled.count == senders * perSender)
    #expect(offQueue == 0)
    for sender in 0..<senders {
      #expect(handled.filter { $0.sender == sender }.map(\.sequence) == Array(0..<perSender))
    }
  }

  struct Refused: Error, Equatable {}

  @Test func anErrorRejectsThatMessageAndTheActorGoesOn() throws {
    let starts = ModelsCounter()
    try CoroutineLoop.run {
      let handledSoFar = ModelsCounter()  // outside the body, so it survives the restart
      let halver = co_actor { (mailbox: CoMailbox<Int, Int>) in
        starts.increment()
        for message in mailbox {
          handledSoFar.increment()
          guard message.value % 2 == 0 else { throw Refused() }
          message.reply(message.value / 2)
        }
      }
      let replies = [4, 3, 10].map { halver.send($0) }
      halver.stop()
      #expect(try co_await(replies[0]) == 2)
      #expect(throws: Refused.self) { try co_await(replies[1]) }
      #expect(try co_await(replies[2]) == 5)
      try co_await(halver.task)
      #expect(handledSoFar.value == 3)
    }
    #expect(starts.value == 2)
  }

  @Test func stopHandlesWhatWasSentAndRejectsWhatComesAfter() throws {
    let log = ModelsLog<String>()
    try CoroutineLoop.run {
      let echo = co_actor { (mailbox: CoMailbox<String, String>) in
        for message in mailbox {
          log.append(message.value)
          message.reply(message.value)
        }
        log.append("actor ended")
      }
      let before = echo.send("before")
      echo.stop()
      echo.stop()  // stopping again does nothing
      let after = echo.send("after")
      #expect(try co_await(before) == "before")
      #expect(throws: CoroutineError.actorStopped) { try co_await(after) }
      try co_await(echo.task)
      #expect(echo.isFinished)
    }
    #expect(log.values == ["before", "actor ended"])
  }

  @Test func anUnansweredMessageRejectsWithActorStopped() throws {
    try CoroutineLoop.run {
      let forgetful = co_actor { (mailbox: CoMailbox<Int, Int>) in
        for message in mailbox where message.value > 0 {
          message.reply(message.value)
        }
      }
      let ignored = forgetful.send(0)
      let answered = forgetful.send(1)
      forgetful.stop()
      #expect(throws: CoroutineError.actorStopped) { try co_await(ignored) }
      #expect(try co_await(answered) == 1)
      try co_await(forgetful.task)
    }
  }

  @Test func messagesLeftWhenTheBodyReturnsAreRejected() throws {
    try CoroutineLoop.run {
      let once = co_actor { (mailbox: CoMailbox<Int, Int>) in
        let first = try mailbox.receive()
        first.reply(first.value * 10)
      }
      let first = once.send(1)
      let second = once.send(2)
      #expect(try co_await(first) == 10)
      try co_await(once.task)
      #expect(throws: CoroutineError.actorStopped) { try co_await(second) }
      #expect(throws: CoroutineError.actorStopped) { try co_await(once.send(3)) }
    }
  }

  @Test func aBodyThatFailsBeforeTakingAMessageEndsTheActor() throws {
    try CoroutineLoop.run {
      let broken = co_actor { (_: CoMailbox<Int, Int>) in throw Refused() }
      let message = broken.send(1)
      #expect(throws: Refused.self) { try co_await(broken.task) }
      #expect(throws: CoroutineError.actorStopped) { try co_await(message) }
    }
  }

  @Test func releasingTheLastHandleStopsTheActor() throws {
    let finished = try CoroutineLoop.run { () throws -> CoTask<Void> in
      var actor: CoActor<Int, Int>? = co_actor { mailbox in
        for message in mailbox { message.reply(message.value) }
      }
      let reply = actor!.send(1)
      let task = actor!.task
      actor = nil
      #expect(try co_await(reply) == 1)
      return task
    }
    // CoroutineLoop.run returned, so the actor (a coroutine of that loop) has ended.
    #expect(finished.isSettled)
  }

  @Test func aStoppedMailboxReceiveThrowsActorStopped() throws {
    try CoroutineLoop.run {
      let outcome = CoPromise<String>()
      let actor = co_actor { (mailbox: CoMailbox<Int, Int>) in
        do {
          _ = try mailbox.receive()
          outcome.fulfill("received")
        } catch {
          outcome.fulfill("\(error)")
        }
      }
      actor.stop()
      #expect(try co_await(outcome) == "\(CoroutineError.actorStopped)")
      try co_await(actor.task)
    }
  }
}

/// The samples of Docs/Coroutines.docc/Articles/Actors.md, verbatim between the markers.
@Suite struct ActorDocSamples {
  @Test func counter() throws {
    let (first, second) = try CoroutineLoop.run { () -> (Int, Int) in
      // sample
      let counter = co_actor { (mailbox: CoMailbox<Int, Int>) in
        var total = 0
        for message in mailbox {
          total += message.value
          message.reply(total)
        }
      }
      let first = try co_await(counter.send(5))  // 5
      let second = try counter.send(10).await()  // 15
      counter.stop()
      // end
      return (first, second)
    }
    #expect(first == 5)
    #expect(second == 15)
  }

  @Test func logger() throws {
    // sample
    let logger = co_actor(on: DispatchQueue(label: "logger")) {
      (mailbox: CoMailbox<String, Void>) in
      var lines: [String] = []
      for message in mailbox {
        lines.append(message.value)
        message.reply(())
      }
    }
    // end
    try CoroutineLoop.run { try co_await(logger.send("started")) }
    logger.stop()
    try CoroutineLoop.run { try co_await(logger.task) }
  }

  @Test func errors() throws {
    try CoroutineLoop.run {
      // sample
      struct OddNumber: Error {}
      let halver = co_actor { (mailbox: CoMailbox<Int, Int>) in
        for message in mailbox {
          guard message.value % 2 == 0 else { throw OddNumber() }
          message.reply(message.value / 2)
        }
      }
      let replies = [4, 3, 10].map { halver.send($0) }
      halver.stop()
      // replies[0] → 2, replies[1] rejects with OddNumber, replies[2] → 5
      // end
      let halves = try [replies[0], replies[2]].map { try co_await($0) }
      #expect(halves == [2, 5])
      #expect(throws: OddNumber.self) { try co_await(replies[1]) }
    }
  }

  @Test func stopping() throws {
    try CoroutineLoop.run {
      // sample
      let echo = co_actor { (mailbox: CoMailbox<String, String>) in
        for message in mailbox { message.reply(message.value) }
      }
      let before = echo.send("before")
      echo.stop()
      let after = echo.send("after")
      // before → "before"; after rejects with CoroutineError.actorStopped
      // end
      let answer = try co_await(before)
      #expect(answer == "before")
      #expect(throws: CoroutineError.actorStopped) { try co_await(after) }
    }
  }
}
