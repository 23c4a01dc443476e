import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

@Suite struct SelectTests {
  @Test func receivesFromWhicheverChannelIsReady() throws {
    let picked = try CoroutineLoop.run { () -> String in
      let numbers = CoChannel<Int>(capacity: 1)
      let words = CoChannel<String>(capacity: 1)
      try words.send("hello")
      return try co_select { select in
        select.receive(from: numbers) { number in "number \(number)" }
        select.receive(from: words) { word in "word \(word)" }
      }
    }
    #expect(picked == "word hello")
  }

  @Test func waitsUntilOneCaseCanComplete() throws {
    let log = ModelsLog<String>()
    try CoroutineLoop.run {
      let numbers = CoChannel<Int>()
      let words = CoChannel<String>()
      co_launch {
        log.append("sending")
        try numbers.send(7)
      }
      let picked = try co_select { select in
        select.receive(from: numbers) { "number \($0)" }
        select.receive(from: words) { "word \($0)" }
      }
      log.append(picked)
      // The losing case left nothing behind: a rendezvous send finds no receiver.
      #expect(!words.trySend("late"))
    }
    #expect(log.values == ["sending", "number 7"])
  }

  @Test func isFairBetweenCasesThatAreAlwaysReady() throws {
    let rounds = 2_000
    let (fromA, fromB) = try CoroutineLoop.run { () -> (Int, Int) in
      let a = CoChannel<Int>(capacity: .max)
      let b = CoChannel<Int>(capacity: .max)
      for n in 0..<rounds {
        a.trySend(n)
        b.trySend(n)
      }
      var fromA = 0
      var fromB = 0
      for _ in 0..<rounds {
        try co_select { select in
          select.receive(from: a) { _ in fromA += 1 }
          select.receive(from: b) { _ in fromB += 1 }
        }
      }
      return (fromA, fromB)
    }
    #expect(fromA + fromB == rounds)
    // A fair coin falls outside 40–60 % of 2 000 tosses with a probability below 1e-18.
    #expect(fromA > rounds * 2 / 5 && fromB > rounds * 2 / 5, "a: \(fromA), b: \(fromB)")
  }

  @Test func everyReadyCaseGetsPicked() throws {
    let counts = try CoroutineLoop.run { () -> [Int] in
      let channels = (0..<4).map { _ in CoChannel<Int>(capacity: .max) }
      for channel in channels { for n in 0..<1_000 { channel.trySend(n) } }
      var counts = [0, 0, 0, 0]
      for _ in 0..<1_000 {
        try co_select { select in
          for (index, channel) in channels.enumerated() {
            select.receive(from: channel) { _ in counts[index] += 1 }
          }
        }
      }
      return counts
    }
    #expect(counts.reduce(0, +) == 1_000)
    #expect(counts.allSatisfy { $0 > 150 }, "\(counts)")
  }

  @Test func theDefaultCaseRunsWhenNothingIsReady() throws {
    try CoroutineLoop.run {
      let channel = CoChannel<Int>(capacity: 1)
      let idle: String = try co_select { select in
        select.receive(from: channel) { "got \($0)" }
        select.default { "nothing yet" }
      }
      #expect(idle == "nothing yet")
      try channel.send(1)
      let busy: String = try co_select { select in
        select.receive(from: channel) { "got \($0)" }
        select.default { "nothing yet" }
      }
      #expect(busy == "got 1")
    }
  }

  @Test func aSelectWithADefaultWorksOutsideCoroutines() throws {
    let channel = CoChannel<Int>(capacity: 1)
    let sent = try co_select { select in
      select.send(1, to: channel) { true }
      select.default { false }
    }
    #expect(sent)
    #expect(channel.tryReceive() == 1)
    #expect(throws: CoroutineError.notInCoroutine) {
      try co_select { select in select.receive(from: channel) { _ in } }
    }
  }

  @Test func theTimeoutRunsWhenNothingArrivesInTime() throws {
    try CoroutineLoop.run {
      let channel = CoChannel<Int>()
      let outcome: String = try co_select { select in
        select.receive(from: channel) { "got \($0)" }
        select.timeout(0.005) { "timed out" }
      }
      #expect(outcome == "timed out")
      #expect(!channel.trySend(1))  // the receive case was withdrawn
    }
  }

  @Test func theTimeoutKeepsTheSchedulersTimeNotTheWallClock() throws {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let task = co_launch(on: loop) { () throws -> String in
      try co_select { select in
        select.receive(from: channel) { "got \($0)" }
        select.timeout(10) { "timed out" }
      }
    }
    loop.runUntilIdle()
    loop.advance(by: 9.5)
    #expect(!task.isSettled)
    loop.advance(by: 0.5)
    #expect(try task.result?.get() == "timed out")
    #expect(loop.pendingTimers == 0)
    #expect(loop.liveCoroutines == 0)
  }

  @Test func aTimeoutAloneIsADelay() throws {
    try CoroutineLoop.run {
      let outcome: String = try co_select { select in select.timeout(0.001) { "done" } }
      #expect(outcome == "done")
    }
  }

  @Test func aCaseThatWinsCancelsTheTimer() throws {
    // If the hour-long timer stayed pending, CoroutineLoop.run would wait for it.
    let outcome = try CoroutineLoop.run { () -> String in
      let channel = CoChannel<Int>()
      co_launch { try channel.send(1) }
      return try co_select { select in
        select.receive(from: channel) { "got \($0)" }
        select.timeout(3_600) { "timed out" }
      }
    }
    #expect(outcome == "got 1")
  }

  @Test func aSendCaseDeliversExactlyOnce() throws {
    try CoroutineLoop.run {
      let requests = CoChannel<Int>()
      let other = CoChannel<Int>()
      let receiver = co_launch { try requests.receive() }
      let outcome: String = try co_select { select in
        select.send(42, to: requests) { "sent" }
        select.receive(from: other) { "got \($0)" }
      }
      #expect(outcome == "sent")
      #expect(try co_await(receiver) == 42)
      #expect(requests.tryReceive() == nil)
    }
  }

  @Test func aLosingSendCaseSendsNothing() throws {
    try CoroutineLoop.run {
      let requests = CoChannel<Int>()
      let replies = CoChannel<String>(capacity: 1)
      try replies.send("ready")
      let outcome: String = try co_select { select in
        select.send(42, to: requests) { "sent" }
        select.receive(from: replies) { $0 }
      }
      #expect(outcome == "ready")
      let late = co_launch { try requests.receive() }
      co_launch { late.cancel() }
      #expect(throws: CancellationError.self) { try co_await(late) }
    }
  }

  @Test func aClosedChannelRunsOnClosedOrThrows() throws {
    try CoroutineLoop.run {
      let channel = CoChannel<Int>(capacity: 1)
      try channel.send(1)
      channel.close()
      let first: String = try co_select { select in
        select.receive(from: channel, onClosed: { "closed" }) { "got \($0)" }
      }
      #expect(first == "got 1")
      let second: String = try co_select { select in
        select.receive(from: channel, onClosed: { "closed" }) { "got \($0)" }
      }
      #expect(second == "closed")
      #expect(throws: CoroutineError.channelClosed) {
        try co_select { select in select.receive(from: channel) { _ in } }
      }
      #expect(throws: CoroutineError.channelClosed) {
        try co_select { select in select.send(2, to: channel) {} }
      }
    }
  }

  @Test func aFanInLoopEndsWhenEveryChannelIsClosed() throws {
    let received = try CoroutineLoop.run { () -> [String] in
      let letters = CoChannel<String>()
      let digits = CoChannel<Int>()
      co_launch {
        for letter in ["a", "b"] { try letters.send(letter) }
        letters.close()
      }
      co_launch {
        for digit in [1, 2, 3] { try digits.send(digit) }
        digits.close()
      }
      var received: [String] = []
      var lettersOpen = true
      var digitsOpen = true
      while lettersOpen || digitsOpen {
        try co_select { select in
          if lettersOpen {
            select.receive(from: letters, onClosed: { lettersOpen = false }) { received.append($0) }
          }
          if digitsOpen {
            select.receive(from: digits, onClosed: { digitsOpen = false }) {
              received.append("\($0)")
            }
          }
        }
      }
      return received
    }
    #expect(received.filter { Int($0) == nil } == ["a", "b"])
    #expect(received.filter { Int($0) != nil } == ["1", "2", "3"])
  }

  @Test func aCancelledSelectWithdrawsEveryCase() throws {
    try CoroutineLoop.run {
      let a = CoChannel<Int>()
      let b = CoChannel<Int>()
      let selecting = co_launch {
        try co_select { select in
          select.receive(from: a) { _ in }
          select.receive(from: b) { _ in }
        }
      }
      co_launch { selecting.cancel() }
      #expect(throws: CancellationError.self) { try co_await(selecting) }
      #expect(!a.trySend(1))
      #expect(!b.trySend(2))
    }
  }

  @Test func theSameChannelMayAppearInSeveralCases() throws {
    try CoroutineLoop.run {
      let channel = CoChannel<Int>(capacity: 1)
      let outcome: String = try co_select { select in
        select.receive(from: channel) { "received \($0)" }
        select.send(5, to: channel) { "sent" }
      }
      #expect(outcome == "sent")
      #expect(channel.tryReceive() == 5)
    }
  }

  /// Selects on two channels racing plain senders and another select across threads: every
  /// value sent is received exactly once.
  @Test func selectsAcrossThreadsLoseNothing() throws {
    let perSender = 20_000
    let a = CoChannel<Int>(capacity: 4)
    let b = CoChannel<Int>()
    let received = ModelsLog<(count: Int, sum: Int)>()
    try CoroutineLoop.run {
      let receivers = (0..<3).map { index in
        co_launch(on: DispatchQueue(label: "select.receiver.\(index)")) {
          var count = 0
          var sum = 0
          var open = 2
          while open > 0 {
            try co_select { select in
              select.receive(from: a, onClosed: { open = 0 }) {
                count += 1
                sum += $0
              }
              select.receive(from: b, onClosed: { open = 0 }) {
                count += 1
                sum += $0
              }
            }
          }
          received.append((count, sum))
        }
      }
      let senders = [a, b].enumerated().map { index, channel in
        co_launch(on: DispatchQueue(label: "select.sender.\(index)")) {
          for n in 0..<perSender { try channel.send(n) }
        }
      }
      // A selecting sender feeds both channels, whichever takes the value first.
      let selectingSender = co_launch(on: DispatchQueue(label: "select.sender.both")) {
        for n in 0..<perSender {
          try co_select { select in
            select.send(n, to: a) {}
            select.send(n, to: b) {}
          }
        }
      }
      for sender in senders { try co_await(sender) }
      try co_await(selectingSender)
      a.close()
      b.close()
      for receiver in receivers { try co_await(receiver) }
    }
    // Each receiver stops at the first closed channel it sees; drain what is left.
    var count = received.values.map(\.count).reduce(0, +)
    var sum = received.values.map(\.sum).reduce(0, +)
    for channel in [a, b] {
      while let n = channel.tryReceive() {
        count += 1
        sum += n
      }
    }
    let expectedSum = 3 * (0..<perSender).reduce(0, +)
    #expect(count == 3 * perSender)
    #expect(sum == expectedSum)
  }
}

@Suite struct SelectMisuseTests {
  @Test func aSelectWithoutCasesStopsWithAMessage() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      try? co_select { (_: CoSelect<Void>) in }
    }
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("co_select: no cases were added"))
  }
}

/// The select samples of Docs/Coroutines.docc/Articles/Channels.md, verbatim between the
/// markers.
@Suite struct SelectDocSamples {
  @Test func overview() throws {
    try CoroutineLoop.run {
      let numbers = CoChannel<Int>()
      let words = CoChannel<String>(capacity: 1)
      let answers = CoChannel<Int>()
      let lookup = CoPromise<String>()
      try words.send("hi")
      // sample
      let message: String = try co_select { select in
        select.receive(from: numbers) { number in "number \(number)" }
        select.receive(from: words) { word in "word \(word)" }
        select.send(42, to: answers) { "sent the answer" }
        select.await(lookup) { name in "looked up \(name)" }
        select.timeout(0.5) { "nothing within half a second" }
      }
      // end
      #expect(message == "word hi")
    }
  }

  @Test func defaultCase() throws {
    // sample
    let channel = CoChannel<Int>(capacity: 1)
    let accepted = try co_select { select in
      select.send(1, to: channel) { true }
      select.default { false }
    }
    // accepted == true; a second identical select would return false
    // end
    #expect(accepted)
    let again = try co_select { select in
      select.send(1, to: channel) { true }
      select.default { false }
    }
    #expect(!again)
  }

  @Test func merge() throws {
    let result = try CoroutineLoop.run { () -> [String] in
      let letters = CoChannel<String>()
      let digits = CoChannel<Int>(capacity: 1)
      co_launch {
        for letter in ["x", "y"] { try letters.send(letter) }
        letters.close()
      }
      co_launch {
        for digit in [7, 8] { try digits.send(digit) }
        digits.close()
      }
      // sample
      var merged: [String] = []
      var lettersOpen = true
      var digitsOpen = true
      while lettersOpen || digitsOpen {
        try co_select { select in
          if lettersOpen {
            select.receive(from: letters, onClosed: { lettersOpen = false }) { merged.append($0) }
          }
          if digitsOpen {
            select.receive(from: digits, onClosed: { digitsOpen = false }) {
              merged.append("\($0)")
            }
          }
        }
      }
      // end
      return merged
    }
    #expect(result.sorted() == ["7", "8", "x", "y"])
  }
}
