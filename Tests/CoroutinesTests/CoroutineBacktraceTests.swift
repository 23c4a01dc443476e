import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// Parks where a backtrace must find it by name: not inlined, so that it is a frame of its own.
@inline(never)
func parkHereToBeFoundInTheBacktrace(_ promise: CoPromise<Int>) throws -> Int {
  try co_await(promise)
}

/// Parks through one more call than `parkHereToBeFoundInTheBacktrace` does.
@inline(never)
func parkOneCallDeeper(_ promise: CoPromise<Int>) throws -> Int {
  try parkHereToBeFoundInTheBacktrace(promise) + 0
}

/// Parks on `channel` from a frame of its own, for the deadlock report's frames.
@inline(never)
func receiveHereToBeFoundInTheDeadlock(_ channel: CoChannel<Int>) throws -> Int {
  try channel.receive()
}

/// Backtraces of parked coroutines, the Go-shaped dump, and the test loop's deadlock check.
@Suite struct CoroutineBacktraceTests {
  @Test func aParkedCoroutinesBacktraceNamesTheFunctionThatParked() throws {
    let loop = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let task = co_launch(on: loop, name: "parks by name") {
      try parkHereToBeFoundInTheBacktrace(promise)
    }
    loop.runUntilIdle()
    let frames = try #require(loop.parkedCoroutines.first?.backtrace)
    #expect(frames.contains { $0.contains("parkHereToBeFoundInTheBacktrace") }, "\(frames)")
    // Innermost first: the function that parked comes before the body that called it.
    let parked = frames.firstIndex { $0.contains("parkHereToBeFoundInTheBacktrace") }
    let body = frames.lastIndex { $0.contains("aParkedCoroutinesBacktraceNamesTheFunction") }
    if let parked, let body { #expect(parked < body, "\(frames)") }
    promise.fulfill(1)
    loop.runUntilIdle()
    #expect(try task.result?.get() == 1)
  }

  @Test func coroutinesParkedAtOnePlaceThroughOtherCallsKeepTheirOwnFrames() throws {
    let loop = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    var tasks: [CoTask<Int>] = []
    for index in 0..<6 {
      tasks.append(
        co_launch(on: loop, name: "place \(index)") {
          index % 2 == 0
            ? try parkHereToBeFoundInTheBacktrace(promise)
            : try parkOneCallDeeper(promise)
        })
    }
    loop.runUntilIdle()
    let parked = loop.parkedCoroutines
    #expect(parked.count == 6)
    for coroutine in parked {
      let index = Int(coroutine.name!.split(separator: " ").last!)!
      let deeper = coroutine.backtrace.contains { $0.contains("parkOneCallDeeper") }
      #expect(deeper == (index % 2 == 1), "\(coroutine.backtrace)")
      #expect(coroutine.backtrace.first { $0.contains("parkHereToBeFound") } != nil)
    }
    promise.fulfill(5)
    loop.runUntilIdle()
    for task in tasks { #expect(try task.result?.get() == 5) }
  }

  @Test func aCoroutineParkedOnALoopIsUnwoundToo() throws {
    let tag = "unwound-\(UUID().uuidString)"
    let frames = try CoroutineLoop.run { () -> [String] in
      let promise = CoPromise<Int>()
      let task = co_launch(name: tag) { try parkHereToBeFoundInTheBacktrace(promise) }
      try co_delay(0)
      let frames = CoroutineDiagnostics.liveCoroutines().first { $0.name == tag }?.backtrace
      promise.fulfill(2)
      #expect(try co_await(task) == 2)
      return frames ?? []
    }
    #expect(frames.contains { $0.contains("parkHereToBeFoundInTheBacktrace") }, "\(frames)")
  }

  @Test func theDumpIsShapedLikeAGoroutineDump() throws {
    let tag = "go-shaped-\(UUID().uuidString)"
    let loop = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let task = co_launch(on: loop, name: tag) { try parkHereToBeFoundInTheBacktrace(promise) }
    loop.runUntilIdle()
    loop.advance(by: 2.5)
    let dump = CoroutineDiagnostics.dump()
    let lines = dump.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    #expect(lines.first?.hasPrefix("swift-coroutines: ") == true)
    let header = try #require(lines.firstIndex { $0.contains("\"\(tag)\"") })
    #expect(
      lines[header].wholeMatch(of: /coroutine \d+ "go-shaped-[-0-9A-F]+" \[future, 2\.5 s\]:/)
        != nil, "\(lines[header])")
    let entry = lines[(header + 1)...].prefix { !$0.isEmpty }
    #expect(
      entry.contains { $0.hasPrefix("    ") && $0.contains("parkHereToBeFoundInTheBacktrace") })
    #expect(entry.last?.hasPrefix("  \"\(tag)\" suspended; scheduler: CoroutineTestLoop") == true)
    promise.fulfill(3)
    loop.runUntilIdle()
    #expect(try task.result?.get() == 3)
  }

  @Test func aLoopWhoseCoroutinesWaitForEachOtherIsADeadlock() throws {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let task = co_launch(on: loop, name: "consumer") {
      _ = try receiveHereToBeFoundInTheDeadlock(channel)
    }
    loop.runUntilIdle()
    let deadlock = try #require(throws: CoroutineDeadlock.self) { try loop.checkForDeadlock() }
    #expect(deadlock.coroutines.map(\.name) == ["consumer"])
    let text = deadlock.description
    #expect(text.hasPrefix("deadlock: 1 coroutine of CoroutineTestLoop(seed: nil, now: 0.0)"))
    #expect(text.contains("\"consumer\" [channel receive, 0.0 s]:"), "\(text)")
    #expect(text.contains("receiveHereToBeFoundInTheDeadlock"), "\(text)")
    task.cancel()
    loop.runUntilIdle()
    try loop.checkForDeadlock()  // nothing left
  }

  @Test func aPendingTimerOrAPostedJobIsNotADeadlock() throws {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let consumer = co_launch(on: loop) { try channel.receive() }
    let sender = co_launch(on: loop) {
      try co_delay(5)  // a timer pending: time will wake it
      try channel.send(4)
    }
    loop.runUntilIdle()
    try loop.checkForDeadlock()
    loop.advance(by: 5)
    #expect(try consumer.result?.get() == 4)
    #expect(sender.isSettled)

    let waiter = co_launch(on: loop) { try channel.receive() }
    loop.runUntilIdle()
    let posted = DispatchSemaphore(value: 0)
    Thread.detachNewThread {  // another thread's job, queued before the check
      loop.schedule { _ = channel.trySend(5) }
      posted.signal()
    }
    posted.wait()
    try loop.checkForDeadlock()
    loop.runUntilIdle()
    #expect(try waiter.result?.get() == 5)
  }

  @Test func aCoroutineParkedWhileVisitingAQueueIsNotADeadlock() throws {
    let tag = "visitor-\(UUID().uuidString)"
    let loop = CoroutineTestLoop()
    let queue = DispatchQueue(label: "visited")
    let never = CoPromise<Int>()
    let task = co_launch(on: loop, name: tag) {
      try co_await(on: queue) { try co_await(never) }
    }
    loop.runUntilIdle()
    let parkedThere = PlainThreads.poll {
      CoroutineRegistry.snapshots().first { $0.name == tag }?.isParked == true
    }
    #expect(parkedThere)
    try loop.checkForDeadlock()  // the queue's side may still answer
    #expect(loop.parkedCoroutines.isEmpty)
    never.fulfill(6)
    #expect(PlainThreads.poll { loop.readyJobs > 0 })  // back home
    loop.runUntilIdle()
    #expect(try task.result?.get() == 6)
  }

  @Test func aWaitForACallbackIsNotADeadlock() throws {
    let loop = CoroutineTestLoop()
    let kept = Mutex<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
    let task = co_launch(on: loop) {
      let _: Int = try co_await { done in kept.withLock { $0 = done } }
    }
    loop.runUntilIdle()
    try loop.checkForDeadlock()  // another thread may call the callback
    kept.withLock { $0?(.success(1)) }
    loop.runUntilIdle()
    #expect(task.isSettled)
  }
}
