import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// What a group and its loops do with work sent after ``CoroutineLoopGroup/shutdown()``: they
/// refuse it at once (a failed task, a thrown error, or a stop with a message), never lose it,
/// and never reach a group that is gone.
@Suite struct CoroutineLoopGroupShutdownTests {
  /// How long a test waits for a task that should settle at once, before calling it lost.
  static let patience = 10.0

  /// The outcome of `task`, waited for from a loop of the test's own thread; a task that has
  /// not settled after ``patience`` seconds fails with ``CoroutineError/timedOut``.
  func outcome<T>(of task: CoTask<T>) -> Result<T, any Error> {
    Result { try CoroutineLoop.run { try co_await(task, timeout: Self.patience) } }
  }

  /// A coroutine launched on a queue of its own (not a loop of the group, nor the test's
  /// thread), whose task the test waits for with `outcome(of:)`.
  func fromOutside<T>(_ body: @escaping @Sendable () throws -> T) -> CoTask<T> {
    co_launch(on: DispatchQueue(label: "CoroutineLoopGroupShutdownTests.outside"), body)
  }

  /// A group of `threads` loops, shut down, whose last reference is gone: its loops, which
  /// the caller keeps, outlive it.
  func loopsOfAReleasedGroup(threads: Int) -> [CoroutineLoop] {
    weak var released: CoroutineLoopGroup?
    let loops = {
      let group = CoroutineLoopGroup(threads: threads)
      group.shutdown()
      released = group
      return group.loops
    }()
    #expect(released == nil, "the group was freed")
    return loops
  }

  /// True when `result` failed with ``CoroutineError/schedulerShutDown``.
  func isShutDown(_ result: Result<some Any, any Error>) -> Bool {
    guard case .failure(let error) = result else { return false }
    return error as? CoroutineError == .schedulerShutDown
  }

  // MARK: After shutdown, from outside

  @Test func awaitingOnAShutDownGroupThrowsAtOnce() {
    let group = CoroutineLoopGroup(threads: 2)
    group.shutdown()
    let ran = Atomic<Bool>(false)
    let hop = fromOutside {
      try co_await(on: group) { () -> Int in
        ran.store(true, ordering: .relaxed)
        return 5
      }
    }
    #expect(isShutDown(outcome(of: hop)))
    let workRan = ran.load(ordering: .relaxed)
    #expect(!workRan)
  }

  @Test func awaitingOnALoopOfAShutDownGroupThrowsAtOnce() {
    let group = CoroutineLoopGroup(threads: 2)
    group.shutdown()
    let hop = fromOutside { try co_await(on: group.loops[1]) { 5 } }
    #expect(isShutDown(outcome(of: hop)))
  }

  @Test func anAwaitOnAShutDownGroupEndsInsideATimeout() {
    let group = CoroutineLoopGroup(threads: 1)
    group.shutdown()
    let task = fromOutside { () throws -> Int in
      let work = co_launch(on: DispatchQueue(label: "inner")) {
        try co_await(on: group) { 5 }
      }
      return try co_await(work, timeout: 1)
    }
    #expect(isShutDown(outcome(of: task)))
  }

  @Test func launchingOnALoopOfAShutDownGroupFailsTheTask() {
    let group = CoroutineLoopGroup(threads: 2)
    group.shutdown()
    let ran = Atomic<Bool>(false)
    let task = co_launch(on: group.loops[0]) { ran.store(true, ordering: .relaxed) }
    #expect(isShutDown(outcome(of: task)))
    let bodyRan = ran.load(ordering: .relaxed)
    #expect(!bodyRan)
  }

  @Test func launchingOnALoopOfAGroupShuttingDownFailsTheTask() throws {
    // The loop still runs (a coroutine of the group is parked), but takes no work from outside.
    let group = CoroutineLoopGroup(threads: 1)
    let gate = CoPromise<Void>()
    let arrived = CoPromise<Void>()
    let parked = co_launch(on: group) {
      arrived.fulfill(())
      try co_await(gate)
    }
    try CoroutineLoop.run { try co_await(arrived, timeout: Self.patience) }
    let shutdown = Thread { group.shutdown() }
    shutdown.start()
    try CoroutineLoop.run {
      // Until `shutdown()` has begun: a launch from outside then fails.
      while true {
        let probe = co_launch(on: group) {}
        if case .failure = Result(catching: { try co_await(probe) }) { break }
        try co_delay(0.001)
      }
    }
    #expect(group.loops[0].isRunning, "the parked coroutine keeps the loop running")
    let task = co_launch(on: group.loops[0]) {}
    #expect(isShutDown(outcome(of: task)))
    let hop = fromOutside { try co_await(on: group.loops[0]) { 5 } }
    #expect(isShutDown(outcome(of: hop)))
    gate.fulfill(())
    _ = outcome(of: parked)
    group.shutdown()
  }

  @Test func workRacingWithShutdownRunsOrFailsButNeverVanishes() throws {
    for _ in 0..<10 {
      let group = CoroutineLoopGroup(threads: 2)
      let tasks = Mutex<[CoTask<Int>]>([])
      let sent = DispatchGroup()
      sent.enter()
      let underWay = DispatchSemaphore(value: 0)
      let sender = Thread {
        let queue = DispatchQueue(label: "CoroutineLoopGroupShutdownTests.racing")
        for index in 0..<100 {
          let task =
            index.isMultiple(of: 2)
            ? co_launch(on: group.loops[index % 4 / 2]) { index }
            : co_launch(on: queue) { try co_await(on: group) { index } }
          tasks.withLock { $0.append(task) }
          if index == 20 { underWay.signal() }  // the rest race with the shutdown
        }
        sent.leave()
      }
      sender.start()
      underWay.wait()
      group.shutdown()
      sent.wait()
      let deadline = monotonicNanoseconds() + UInt64(Self.patience * 1e9)
      let outcomes = try CoroutineLoop.run { () -> [Result<Int, any Error>] in
        tasks.withLock { $0 }.map { task in
          Result {
            let now = monotonicNanoseconds()
            return try co_await(task, timeout: Double(deadline > now ? deadline - now : 0) / 1e9)
          }
        }
      }
      for (index, outcome) in outcomes.enumerated() {
        if case .success(let value) = outcome {
          #expect(value == index)
        } else {
          #expect(isShutDown(outcome), "\(index): \(outcome)")
        }
      }
      group.shutdown()
    }
  }

  @Test func aCoroutineOfALoopParkedAtShutdownIsWokenFromOutside() throws {
    let group = CoroutineLoopGroup(threads: 2)
    let gate = CoPromise<Int>()
    let arrived = CoPromise<Void>()
    let parked = co_launch(on: group.loops[1]) { () -> Int in
      arrived.fulfill(())
      return try co_await(gate) + 1
    }
    try CoroutineLoop.run { try co_await(arrived, timeout: Self.patience) }
    let shutdownThread = Thread { group.shutdown() }
    shutdownThread.start()
    try CoroutineLoop.run { try co_delay(0.01) }
    gate.fulfill(1)
    #expect(try outcome(of: parked).get() == 2)
    group.shutdown()
  }

  // MARK: A visitor keeps the group running

  @Test func aCoroutineAwaitingOnTheGroupKeepsItRunningUntilItLeaves() throws {
    let group = CoroutineLoopGroup(threads: 1)
    let gate = CoPromise<Int>()
    let arrived = CoPromise<Void>()
    let visitor = fromOutside {
      try co_await(on: group) { () -> Int in
        arrived.fulfill(())
        return try co_await(gate) + 1
      }
    }
    try CoroutineLoop.run { try co_await(arrived, timeout: Self.patience) }
    let shutDown = Atomic<Bool>(false)
    let shutdownThread = Thread {
      group.shutdown()
      shutDown.store(true, ordering: .releasing)
    }
    shutdownThread.start()
    try CoroutineLoop.run { try co_delay(0.02) }
    let returnedEarly = shutDown.load(ordering: .acquiring)
    #expect(!returnedEarly, "the group waits for the coroutine that came to it")
    gate.fulfill(41)
    #expect(try outcome(of: visitor).get() == 42)
    try CoroutineLoop.run {
      while !shutDown.load(ordering: .acquiring) { try co_delay(0.001) }
    }
  }

  @Test func aCoroutineAwaitingOnALoopOfTheGroupKeepsItRunningUntilItLeaves() throws {
    let group = CoroutineLoopGroup(threads: 2)
    let gate = CoPromise<Int>()
    let arrived = CoPromise<Void>()
    let visitor = fromOutside {
      try co_await(on: group.loops[1]) { () -> Bool in
        arrived.fulfill(())
        _ = try co_await(gate)
        return CoroutineLoop.current === group.loops[1]
      }
    }
    try CoroutineLoop.run { try co_await(arrived, timeout: Self.patience) }
    let shutdownThread = Thread { group.shutdown() }
    shutdownThread.start()
    try CoroutineLoop.run { try co_delay(0.02) }
    #expect(group.loops[1].isRunning, "the loop waits for the coroutine that came to it")
    gate.fulfill(1)
    #expect(try outcome(of: visitor).get())
    group.shutdown()
  }

  // MARK: While it drains, from inside

  @Test func theGroupsOwnCoroutinesStillSendWorkToItsLoopsWhileItDrains() throws {
    let group = CoroutineLoopGroup(threads: 2)
    let task = co_launch(on: group) { () -> [Int] in
      group.shutdown()
      let other = group.loops.first { $0 !== CoroutineLoop.current }!
      let launched = try co_await(co_launch(on: other) { 1 })
      let hopped = try co_await(on: other) { CoroutineLoop.current === other ? 2 : -2 }
      let scheduled: Int = try co_await { done in other.schedule { done(.success(3)) } }
      let timed: Int = try co_await { done in
        _ = other.schedule(after: 0.001) { done(.success(4)) }
      }
      return [launched, hopped, scheduled, timed]
    }
    let values = try outcome(of: task).get()
    #expect(values == [1, 2, 3, 4])
    group.shutdown()
  }

  // MARK: A loop that has ended

  @Test func aLoopThatEndedRefusesWorkFromTheGroupsOtherLoops() throws {
    let group = CoroutineLoopGroup(threads: 2)
    let started = CoPromise<Void>()
    // A coroutine of loop 1 keeps that loop running after loop 0 has ended.
    let task = co_launch(on: group.loops[1]) { () -> [Bool] in
      try co_await(on: group.loops[0]) {}  // loop 0 has started: it runs until it ends
      started.fulfill(())
      while group.loops[0].isRunning { try co_delay(0.001) }
      let launch = co_launch(on: group.loops[0]) { 1 }
      let launched = Result { try co_await(launch) }
      let hopped = Result { try co_await(on: group.loops[0]) { 2 } }
      return [isShutDown(launched), isShutDown(hopped)]
    }
    try CoroutineLoop.run { try co_await(started, timeout: Self.patience) }
    group.shutdown()
    #expect(try outcome(of: task).get() == [true, true])
  }

  @Test func aGroupIsFreedOnceShutdownHasReturnedAndItsCallersLetGo() {
    for _ in 0..<20 {
      // The expectation is the helper's: no thread of the group still holds it.
      #expect(loopsOfAReleasedGroup(threads: 2).count == 2)
    }
  }

  @Test func aLoopOfAReleasedGroupRefusesLaunchesAndAwaits() {
    let loops = loopsOfAReleasedGroup(threads: 2)
    let ran = Atomic<Bool>(false)
    let task = co_launch(on: loops[0]) { ran.store(true, ordering: .relaxed) }
    #expect(isShutDown(outcome(of: task)))
    let bodyRan = ran.load(ordering: .relaxed)
    #expect(!bodyRan)
    let hop = fromOutside { try co_await(on: loops[1]) { 5 } }
    #expect(isShutDown(outcome(of: hop)))
    #expect(loops.allSatisfy { !$0.isRunning })
  }

  // MARK: Deliveries that were asked for before the shutdown

  @Test func aChannelFutureForAShutDownGroupSettlesWithTheValueWhereItIsSent() throws {
    let group = CoroutineLoopGroup(threads: 1)
    let channel = CoChannel<Int>()
    let onGroup = channel.receiveFuture(on: group)
    let onLoop = channel.receiveFuture(on: group.loops[0])
    group.shutdown()
    #expect(channel.trySend(7))
    #expect(channel.trySend(8))
    #expect(try onGroup.result?.get() == 7)
    #expect(try onLoop.result?.get() == 8)
  }

  @Test func aChannelCallbackForAShutDownGroupIsDroppedUncalled() {
    let group = CoroutineLoopGroup(threads: 1)
    let channel = CoChannel<Int>()
    let called = CallCount()
    channel.whenReceive(on: group) { _ in called.add() }
    channel.whenReceive(on: group.loops[0]) { _ in called.add() }
    group.shutdown()
    #expect(channel.trySend(1))
    #expect(channel.trySend(2))
    #expect(called.value == 0)
  }
}

/// Counts calls from any thread.
private final class CallCount: Sendable {
  private let count = Atomic<Int>(0)
  func add() { count.add(1, ordering: .relaxed) }
  var value: Int { count.load(ordering: .relaxed) }
}
