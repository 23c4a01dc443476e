import Foundation
import Testing

@testable import Coroutines

/// The invariants the lean spawn path relies on: the pool's raw list of fibers, the registry's
/// raw slot tables (grown, reused and listed), and a task published with nobody observing it.
@Suite struct SpawnPathTests {
  @Test func aFiberListIsLastInFirstOutAndGrowsPastItsFirstCapacity() {
    var list = FiberList()
    #expect(list.popLast() == nil)
    let fibers = (1...100).map { OpaquePointer(bitPattern: $0 * 16)! }
    for fiber in fibers { list.append(fiber) }
    #expect(list.count == 100)
    for fiber in fibers.reversed() { #expect(list.popLast() == fiber) }
    #expect(list.count == 0)
    #expect(list.popLast() == nil)
    list.append(fibers[0])
    #expect(list.popLast() == fibers[0])
  }

  @Test func theRegistryListsThousandsOfUnstartedCoroutinesAndForgetsThemWhenTheyFinish() throws {
    // More than the registry's first capacity in every one of its tables, so each grows; a
    // second round reuses the slots the first gave back.
    let tag = "registry-\(UUID().uuidString)"
    let mine = { CoroutineDiagnostics.liveCoroutines().filter { $0.name?.hasPrefix(tag) == true } }
    try CoroutineLoop.run {
      for round in 0..<2 {
        let names = (0..<3_000).map { "\(tag) \(round) \($0)" }
        let tasks = names.map { name in co_launch(name: name) { name } }
        let listed = mine()
        #expect(listed.count == names.count)
        #expect(Set(listed.compactMap(\.name)) == Set(names))
        #expect(listed.allSatisfy { $0.state == "created" })
        for (task, name) in zip(tasks, names) {
          let value = try co_await(task)
          #expect(value == name)
        }
        #expect(mine().isEmpty)
      }
    }
  }

  @Test func aTaskPublishedWithNobodyObservingStillReachesLaterObservers() throws {
    try CoroutineLoop.run {
      let value = co_launch { 42 }
      let failure = co_launch { () throws -> Int in throw CoroutineError.notInCoroutine }
      // Both finish before anyone looks: they were published with no observer registered.
      try co_delay(0)
      try co_delay(0)
      #expect(value.isSettled && failure.isSettled)
      var seen: [Result<Int, any Error>] = []
      value.whenComplete { seen.append($0) }
      failure.whenComplete { seen.append($0) }
      #expect(seen.count == 2)
      #expect(try seen[0].get() == 42)
      #expect(throws: CoroutineError.notInCoroutine) { try seen[1].get() }
      #expect(try co_await(value) == 42)
    }
  }

  @Test func aTaskDroppedWhileItsBodyRunsIsPublishedThenFreedWithItsCoroutine() throws {
    // The attachment's reference to the task moves into the closure that publishes it, and the
    // coroutine's last reference is its own: with the launcher's handle gone before the body
    // ends, both must live until the outcome is out, then go.
    let seen = Journal<Int>()
    let references = try CoroutineLoop.run { () -> WeakPair in
      let gate = CoPromise<Void>()
      let references = WeakPair()
      do {
        let task = co_launch { () -> Int in
          try co_await(gate)
          return 7
        }
        task.whenComplete { seen.append((try? $0.get()) ?? -1) }
        references.task = task
        references.coroutine = task.coroutine
      }
      try co_delay(0)
      #expect(references.task != nil)
      gate.fulfill(())
      try co_delay(0)
      try co_delay(0)
      return references
    }
    #expect(seen.entries == [7])
    #expect(references.task == nil)
    #expect(references.coroutine == nil)
  }

  @Test func aLoopCountsCoroutinesLaunchedFromAnotherThreadAndFinishedOnItsOwn() throws {
    // Counted by the other thread, uncounted by the loop's: the loop must still wait for every
    // one of them after its body has returned, and end once they are done.
    let finished = Journal<Int>()
    try CoroutineLoop.run {
      let loop = CoroutineLoop.current!
      let _: Void = try co_await { done in
        DispatchQueue(label: "launcher").async {
          for index in 0..<200 {
            co_launch(on: loop, detached: true) {
              try co_delay(0)
              finished.append(index)
            }
          }
          done(.success(()))
        }
      }
    }
    #expect(Set(finished.entries) == Set(0..<200))
  }

  @Test func aCoroutineAwayFromHomeResumesThereAndComesBackHome() throws {
    // `scheduler` is `home` unless the coroutine hops: kept as a second reference only while
    // away.
    let queue = DispatchQueue(label: "away")
    let seen = try CoroutineLoop.run { () -> [Bool] in
      let coroutine = Coroutine.current!
      let before = coroutine.scheduler === coroutine.home as AnyObject
      let during = try co_await(on: queue) { () -> [Bool] in
        let current = Coroutine.current!
        return [current.isAway, current.scheduler as AnyObject === queue]
      }
      let after = coroutine.scheduler === coroutine.home as AnyObject
      return [before, !coroutine.isAway] + during + [after, !coroutine.isAway]
    }
    #expect(seen == [true, true, true, true, true, true])
  }

  @Test func aLoopIsFreedOnceItsLastCoroutineIsGone() throws {
    // A coroutine counts itself in its loop through an unretained reference, kept alive by
    // its `home`: the loop must outlive the count of its last coroutine, and then go.
    let reference = WeakLoop()
    let finished = Journal<Int>()
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
      do {
        let loop = CoroutineLoop()
        reference.loop = loop
        for index in 0..<100 {
          co_launch(on: loop) {
            try co_delay(0)
            finished.append(index)
          }
        }
        loop.run()
      }
      done.signal()
    }
    thread.start()
    done.wait()
    #expect(Set(finished.entries) == Set(0..<100))
    #expect(reference.loop == nil)
  }

  @Test func theLiveCountIncludesEveryParkedCoroutine() throws {
    // Other tests only add to the count while these are parked, so it is at least theirs.
    try CoroutineLoop.run {
      let gate = CoPromise<Void>()
      let tasks = (0..<3_000).map { _ in co_launch { try co_await(gate) } }
      try co_delay(0)
      #expect(CoroutineRegistry.liveCount >= 3_000)
      gate.fulfill(())
      for task in tasks { try co_await(task) }
    }
  }

  @Test func anUnobservedFailurePublishedWithNoObserverIsStillReported() throws {
    let reported = ReportLog()
    try CoUnhandledErrors.withHandler({ name, _ in reported.append(name) }) {
      try CoroutineLoop.run {
        co_launch(name: "unobserved", detached: true) { throw CoroutineError.notInCoroutine }
      }
    }
    #expect(reported.names == ["unobserved"])
  }
}

/// Names reported to an unhandled-error handler, from whichever thread reports them.
private final class ReportLog: @unchecked Sendable {  // reason: every access holds `lock`
  private let lock = NSLock()
  private var storage: [String?] = []
  func append(_ name: String?) { lock.withLock { storage.append(name) } }
  var names: [String?] { lock.withLock { storage } }
}

/// Weak references to a task and its coroutine, handed out of a loop's body.
private final class WeakPair: @unchecked Sendable {  // reason: used on one thread at a time
  weak var task: CoTask<Int>?
  weak var coroutine: Coroutine?
}

/// A weak reference to a loop, handed from the thread that runs it.
private final class WeakLoop: @unchecked Sendable {  // reason: written before `done` signals
  weak var loop: CoroutineLoop?
}
