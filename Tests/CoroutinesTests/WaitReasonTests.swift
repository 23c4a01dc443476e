import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// Seeing inside: every park names its reason, how long it has waited on its scheduler's clock,
/// and the frames of the coroutine's stack. Other tests run at the same time, so each test
/// looks only at its own test loop, or at coroutines with its own unique names.
@Suite struct WaitReasonTests {
  /// A callback kept, never called, so that the wait on it neither ends nor is abandoned.
  final class KeptCallback: Sendable {
    let callback = Mutex<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
  }

  /// A continuation kept for the test to resume.
  final class KeptContinuation: Sendable {
    let continuation = Mutex<CheckedContinuation<Int, Never>?>(nil)
  }

  @Test func everyWayToParkNamesItselfInTheSnapshot() throws {
    let loop = CoroutineTestLoop()
    let never = CoPromise<Int>()
    let full = CoChannel<Int>()
    let empty = CoChannel<Int>()
    let mutex = CoMutex()
    let semaphore = CoSemaphore(value: 0)
    let group = CoWaitGroup()
    group.add(1)
    let condition = CoCondition()
    let conditionMutex = CoMutex()
    let rwLock = CoRWLock()
    let kept = KeptCallback()
    var tasks: [CoTask<Void>] = []
    func park(_ name: String, _ body: @escaping @Sendable () throws -> Void) {
      tasks.append(co_launch(on: loop, name: name, body))
    }
    park("sends") { try full.send(1) }
    park("receives") { _ = try empty.receive() }
    park("selects") { try co_select { $0.receive(from: empty) { _ in } } }
    park("awaits") { _ = try co_await(never) }
    park("sleeps") { try co_delay(100) }
    park("holds the mutex") { try mutex.withLock { _ = try co_await(never) } }
    park("locks") { try mutex.lock() }
    park("signals") { try semaphore.wait() }
    park("joins") { try group.wait() }
    park("waits for the condition") {
      try conditionMutex.withLock { try condition.wait(conditionMutex) }
    }
    park("writes first") { try rwLock.withWriteLock { _ = try co_await(never) } }
    park("reads") { try rwLock.withReadLock {} }
    park("writes next") { try rwLock.withWriteLock {} }
    park("calls back") {
      let _: Int = try co_await { done in kept.callback.withLock { $0 = done } }
    }
    let waiting = co_sequence(on: loop, name: "produces for nobody") { (yield: CoYield<Int>) in
      _ = try co_await(never)
      try yield(1)
    }
    park("consumes") { _ = waiting.next() }
    let actor = co_actor(on: loop, name: "serves") { (mailbox: CoMailbox<Int, Int>) in
      for message in mailbox { message.reply(message.value) }
    }
    loop.runUntilIdle()

    let reasons = Dictionary(
      loop.parkedCoroutines.map { ($0.name ?? "", $0.waitReason) }, uniquingKeysWith: { a, _ in a })
    #expect(reasons["sends"] == "channel send")
    #expect(reasons["receives"] == "channel receive")
    #expect(reasons["selects"] == "select")
    #expect(reasons["awaits"] == "future")
    #expect(reasons["sleeps"] == "delay")
    #expect(reasons["holds the mutex"] == "future")
    #expect(reasons["locks"] == "mutex")
    #expect(reasons["signals"] == "semaphore")
    #expect(reasons["joins"] == "wait group")
    #expect(reasons["waits for the condition"] == "condition")
    #expect(reasons["writes first"] == "future")
    #expect(reasons["reads"] == "read lock")
    #expect(reasons["writes next"] == "write lock")
    #expect(reasons["calls back"] == "callback")
    #expect(reasons["produces for nobody"] == "future")
    #expect(reasons["consumes"] == "generator")
    #expect(reasons["serves"] == "actor")

    for task in tasks { task.cancel() }
    waiting.cancel()
    actor.stop()
    loop.advance(by: 100)
    kept.callback.withLock { $0?(.success(0)) }
    loop.runUntilIdle()
    #expect(loop.liveCoroutines == 0)
  }

  @Test func aProducerWaitingForDemandWaitsForTheGenerator() throws {
    let loop = CoroutineTestLoop()
    let values = co_sequence(on: loop, name: "produces ahead") { (yield: CoYield<Int>) in
      try yield(1)
      try yield(2)
    }
    let first = co_launch(on: loop) { values.next() }
    loop.runUntilIdle()
    #expect(try first.result?.get() == 1)
    let producer = loop.parkedCoroutines.first { $0.name == "produces ahead" }
    #expect(producer?.waitReason == "generator")
    values.cancel()
    loop.runUntilIdle()
    #expect(loop.liveCoroutines == 0)
  }

  /// Async, and waiting with `Task.yield()`: blocking a thread of the cooperative pool while a
  /// task must run there could starve that task on a small machine.
  @Test func aWaitForASwiftTaskSaysSo() async throws {
    let loop = CoroutineTestLoop()
    let kept = KeptContinuation()
    let task = co_launch(on: loop, name: "bridges") {
      try co_await(async: {
        await withCheckedContinuation { continuation in
          kept.continuation.withLock { $0 = continuation }
        }
      })
    }
    loop.runUntilIdle()
    #expect(loop.parkedCoroutines.first?.waitReason == "Swift task")
    try loop.checkForDeadlock()  // the task may still answer
    while kept.continuation.withLock({ $0 == nil }) { await Task.yield() }
    kept.continuation.withLock { $0?.resume(returning: 8) }
    while loop.readyJobs == 0 { await Task.yield() }
    loop.runUntilIdle()
    #expect(try task.result?.get() == 8)
  }

  @Test func aSnapshotOfACoroutineThatIsNotParkedHasNoReasonAndNoFrames() throws {
    let tag = "not-parked-\(UUID().uuidString)"
    let view = try CoroutineLoop.run {
      try co_await(
        co_launch(name: tag) {
          CoroutineDiagnostics.liveCoroutines().first { $0.name == tag }
        })
    }
    #expect(view?.state == "running")
    #expect(view?.waitReason == nil)
    #expect(view?.waitingFor == nil)
    #expect(view?.backtrace.isEmpty == true)
  }

  @Test func waitingForIsExactOnTheTestLoopsVirtualClock() throws {
    let loop = CoroutineTestLoop()
    let never = CoPromise<Int>()
    let early = co_launch(on: loop, name: "early") { _ = try co_await(never) }
    loop.runUntilIdle()
    loop.advance(by: 1)
    let late = co_launch(on: loop, name: "late") { _ = try co_await(never) }
    loop.runUntilIdle()
    loop.advance(by: 1.5)
    let waited = Dictionary(
      loop.parkedCoroutines.map { ($0.name ?? "", $0.waitingFor) }, uniquingKeysWith: { a, _ in a })
    #expect(waited["early"] == 2.5)
    #expect(waited["late"] == 1.5)
    early.cancel()
    late.cancel()
    loop.runUntilIdle()
    #expect(loop.liveCoroutines == 0)
  }

  @Test func waitingLongerThanListsTheStuckWaitsLongestFirst() throws {
    let tag = "stuck-\(UUID().uuidString)"
    let loop = CoroutineTestLoop()
    let never = CoPromise<Int>()
    let long = co_launch(on: loop, name: "\(tag) long") { _ = try co_await(never) }
    loop.advance(by: 20)
    let short = co_launch(on: loop, name: "\(tag) short") { _ = try co_await(never) }
    loop.advance(by: 10)
    let mine = { (seconds: Double) in
      CoroutineDiagnostics.waitingLongerThan(seconds).compactMap(\.name).filter {
        $0.hasPrefix(tag)
      }
    }
    #expect(mine(5) == ["\(tag) long", "\(tag) short"])
    #expect(mine(15) == ["\(tag) long"])
    #expect(mine(30) == [])
    long.cancel()
    short.cancel()
    loop.runUntilIdle()
    #expect(loop.liveCoroutines == 0)
  }

  @Test func aSleepOnALoopNamesItselfAndItsWaitStartsNow() throws {
    let tag = "sleeper-\(UUID().uuidString)"
    let view = try CoroutineLoop.run { () -> CoroutineSnapshot? in
      let sleeper = co_launch(name: tag) { try co_delay(60) }
      try co_delay(0)  // the sleeper parks
      defer { sleeper.cancel() }
      return CoroutineDiagnostics.liveCoroutines().first { $0.name == tag }
    }
    #expect(view?.waitReason == "delay")
    let waited = try #require(view?.waitingFor)
    #expect(waited >= 0 && waited < 60)
    #expect(view?.backtrace.contains { $0.contains("co_delay") } == true)
  }
}
