import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// A group of loops: work placed on every loop, coroutines moving between them, shutdown.
@Suite struct CoroutineLoopGroupTests {
  /// Waits, from a test's thread, for `task`'s value on a loop of the calling thread's own.
  func value<T>(of task: CoTask<T>) throws -> T {
    try CoroutineLoop.run { try co_await(task) }
  }

  @Test func aGroupRunsOneLoopPerThread() throws {
    let group = CoroutineLoopGroup(threads: 3)
    defer { group.shutdown() }
    #expect(group.loops.count == 3)
    let threads = Mutex<Set<ObjectIdentifier>>([])
    for loop in group.loops {
      let task = co_launch(on: loop) { () -> Bool in
        threads.withLock { _ = $0.insert(threadID()) }
        return CoroutineLoop.current === loop
      }
      #expect(try value(of: task))
    }
    #expect(threads.withLock { $0.count } == 3)
  }

  @Test func coroutinesLaunchedFromOutsideSpreadOverTheLoops() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let seen = Mutex<Set<ObjectIdentifier>>([])
    // CPU-bound bodies that never suspend: each holds its loop until it ends.
    let tasks = (0..<2).map { _ in
      co_launch(on: group) { () -> Int in
        seen.withLock { _ = $0.insert(ObjectIdentifier(CoroutineLoop.current!)) }
        return (0..<200_000).reduce(0, &+)
      }
    }
    for task in tasks { #expect(try value(of: task) == 19_999_900_000) }
    #expect(seen.withLock { $0.count } == 2, "both threads ran coroutines")
  }

  @Test func anIdleLoopTakesReadyCoroutinesFromABusyOne() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let ranElsewhere = Atomic<Int>(0)
    let parent = co_launch(on: group) { () -> Int in
      let home = CoroutineLoop.current!
      // The children start on this loop's queue, behind a parent that keeps the thread.
      let children = (0..<20).map { _ in
        co_launch(on: group) {
          if CoroutineLoop.current !== home { ranElsewhere.add(1, ordering: .relaxed) }
        }
      }
      let deadline = monotonicNanoseconds() + 10_000_000_000
      while ranElsewhere.load(ordering: .relaxed) == 0, monotonicNanoseconds() < deadline {}
      for child in children { try co_await(child) }
      return ranElsewhere.load(ordering: .relaxed)
    }
    #expect(try value(of: parent) > 0)
  }

  @Test func coroutinesWokenFromOutsideTheGroupCanBeTakenByAnIdleLoop() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let gate = CoPromise<Void>()
    let parkedOn = Mutex<[Int]>([0, 0])
    let busiest = Atomic<Int>(-1)
    let moved = Atomic<Int>(0)
    let holding = Atomic<Bool>(false)
    let children = (0..<20).map { _ in
      co_launch(on: group) {
        let before = group.loops.firstIndex { $0 === CoroutineLoop.current }!
        parkedOn.withLock { $0[before] += 1 }
        try co_await(gate)
        let after = group.loops.firstIndex { $0 === CoroutineLoop.current }!
        if after != before { moved.add(1, ordering: .relaxed) }
        // The first to wake on the loop where most parked keeps that loop busy, while the
        // others woken there wait behind it.
        guard before == busiest.load(ordering: .relaxed), after == before,
          !holding.exchange(true, ordering: .relaxed)
        else { return }
        let deadline = monotonicNanoseconds() + 10_000_000_000
        while moved.load(ordering: .relaxed) == 0, monotonicNanoseconds() < deadline {}
      }
    }
    try CoroutineLoop.run {
      while parkedOn.withLock({ $0[0] + $0[1] }) < 20 { try co_delay(0.001) }
    }
    let counts = parkedOn.withLock { $0 }
    busiest.store(counts[0] >= counts[1] ? 0 : 1, ordering: .relaxed)
    gate.fulfill(())  // from this thread, outside the group
    for child in children { try value(of: child) }
    let movedCount = moved.load(ordering: .relaxed)
    #expect(movedCount > 0, "parked per loop: \(counts)")
  }

  @Test func aCoroutineMovesToTheLoopOfTheCoroutineThatWokeIt() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let parkedOn = CoPromise<CoroutineLoop>()
    let wakeUp = CoPromise<CoroutineLoop>()
    let receiver = co_launch(on: group) { () -> Bool in
      parkedOn.fulfill(CoroutineLoop.current!)
      let waker = try co_await(wakeUp)
      return CoroutineLoop.current === waker
    }
    // The waker runs on the other loop, once the receiver has parked.
    let waker = try CoroutineLoop.run { () -> CoTask<Void> in
      let parked = try co_await(parkedOn)
      while receiver.coroutine.currentState != .suspended { try co_delay(0.001) }
      let other = group.loops.first { $0 !== parked }!
      return co_launch(on: other) { wakeUp.fulfill(CoroutineLoop.current!) }
    }
    try value(of: waker)
    #expect(try value(of: receiver))
  }

  @Test func noCoroutineRunsOnTwoThreadsAtOnce() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let overlaps = Atomic<Int>(0)
    let channel = CoChannel<Int>(capacity: 4)
    let rounds = 2_000
    let tasks = (0..<16).map { index in
      co_launch(on: group) {
        let running = Atomic<Bool>(false)
        /// Marks the coroutine running; another thread already running it is an overlap.
        func enter() {
          if running.exchange(true, ordering: .acquiringAndReleasing) {
            overlaps.add(1, ordering: .relaxed)
          }
        }
        func leave() { running.store(false, ordering: .releasing) }
        enter()
        for round in 0..<rounds {
          leave()
          if index % 2 == 0 {
            try channel.send(round)
          } else {
            _ = try channel.receive()
          }
          enter()
          leave()
          try co_delay(0)
          enter()
        }
        leave()
      }
    }
    for task in tasks { try value(of: task) }
    let overlapCount = overlaps.load(ordering: .relaxed)
    #expect(overlapCount == 0)
  }

  @Test func theGroupCountsCoroutinesThatFinishOnAnotherLoopThanTheyStarted() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let channel = CoChannel<Int>()
    let gate = CoPromise<Void>()
    // Children start beside their parent, on either loop; half of them are woken by the other
    // half, so many finish on another loop than the one that counted them in.
    let parents = (0..<2).map { _ in
      co_launch(on: group) {
        let children = (0..<100).map { index in
          co_launch(on: group) {
            try co_await(gate)
            if index % 2 == 0 { try channel.send(index) } else { _ = try channel.receive() }
          }
        }
        for child in children { try co_await(child) }
      }
    }
    try CoroutineLoop.run {
      while group.liveCount < 202 { try co_delay(0.001) }
      #expect(group.liveCount == 202)
      gate.fulfill(())
      for parent in parents { try co_await(parent) }
      // A task settles as its body returns; its coroutine leaves the count a moment later, on
      // its loop, once off its stack. A count that missed a finish would stay above zero.
      let deadline = monotonicNanoseconds() + 5_000_000_000
      while group.liveCount > 0, monotonicNanoseconds() < deadline { try co_delay(0.001) }
    }
    #expect(group.liveCount == 0)
  }

  @Test func aHandleOfAFinishedChildStillNamesItsGroup() throws {
    let group = CoroutineLoopGroup(threads: 2)
    let handle = try CoroutineLoop.run {
      try co_await(
        co_launch(on: group) { () -> CoroutineHandle in
          try co_await(co_launch { CoroutineHandle.current! })  // a child: inherits the group
        })
    }
    group.shutdown()
    #expect(handle.isFinished)
    #expect(handle.scheduler === group)
  }

  @Test func aMillionMessagesBetweenLoopsArriveOnce() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let producers = 4
    // A million, unless `COROUTINES_STRESS_MESSAGES` lowers it (as under ThreadSanitizer).
    let perProducer = StressTests.messages / producers
    let channel = CoChannel<Int>(capacity: 128)
    // Producers homed on one loop, consumers on the other: every message crosses threads,
    // unless a consumer was woken on the producers' loop and moved there.
    let sends = (0..<producers).map { producer in
      co_launch(on: group.loops[0]) {
        for value in 0..<perProducer { try channel.send(producer * perProducer + value) }
      }
    }
    let receives = (0..<producers).map { _ in
      co_launch(on: group) { () -> (count: Int, sum: Int) in
        var count = 0
        var sum = 0
        for value in channel {
          count += 1
          sum &+= value
        }
        return (count, sum)
      }
    }
    for send in sends { try value(of: send) }
    channel.close()
    var count = 0
    var sum = 0
    for receive in receives {
      let (received, partial) = try value(of: receive)
      count += received
      sum &+= partial
    }
    let total = producers * perProducer
    #expect(count == total)
    #expect(sum == total * (total - 1) / 2)
  }

  @Test func cancellingFromAnotherLoopEndsAWaitAtOnce() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let never = CoPromise<Int>()
    let waiting = CoPromise<Void>()
    let waiter = co_launch(on: group.loops[0]) { () -> Int in
      waiting.fulfill(())
      return try co_await(never)
    }
    let canceller = co_launch(on: group.loops[1]) {
      try co_await(waiting)  // the waiter runs: the cancel finds it waiting, not unstarted
      waiter.cancel()
    }
    try value(of: canceller)
    #expect(throws: CancellationError.self) { try value(of: waiter) }
  }

  @Test func timeoutsAndDelaysWorkOnEveryLoop() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let tasks = (0..<8).map { _ in
      co_launch(on: group) { () -> Bool in
        try co_delay(0.005)
        do {
          _ = try co_await(CoPromise<Int>().timeout(0.005))
          return false
        } catch CoroutineError.timedOut {
          return true
        }
      }
    }
    for task in tasks { #expect(try value(of: task)) }
  }

  @Test func aSharedStackCoroutineStaysOnItsLoop() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let task = co_launch(on: group, stack: .shared) { () -> Bool in
      let home = CoroutineLoop.current
      for _ in 0..<100 { try co_delay(0) }
      return CoroutineLoop.current === home
    }
    #expect(try value(of: task))
  }

  @Test func shutdownLetsParkedCoroutinesFinish() throws {
    let group = CoroutineLoopGroup(threads: 2)
    let gate = CoPromise<Int>()
    let tasks = (0..<10).map { index in
      co_launch(on: group) { try co_await(gate) + index }
    }
    let shutDown = Atomic<Bool>(false)
    let shutdownThread = Thread {
      group.shutdown()
      shutDown.store(true, ordering: .releasing)
    }
    shutdownThread.start()
    // The group waits for its parked coroutines: shutdown has not returned.
    try CoroutineLoop.run { try co_delay(0.02) }
    let returnedEarly = shutDown.load(ordering: .acquiring)
    #expect(!returnedEarly)
    gate.fulfill(100)
    for (index, task) in tasks.enumerated() { #expect(try value(of: task) == 100 + index) }
    try CoroutineLoop.run {
      while !shutDown.load(ordering: .acquiring) { try co_delay(0.001) }
    }
  }

  @Test func launchingAfterShutdownFailsTheTask() throws {
    let group = CoroutineLoopGroup(threads: 1)
    group.shutdown()
    let ran = Atomic<Bool>(false)
    let task = co_launch(on: group) { ran.store(true, ordering: .relaxed) }
    #expect(throws: CoroutineError.schedulerShutDown) { try value(of: task) }
    let bodyRan = ran.load(ordering: .relaxed)
    #expect(!bodyRan)
  }

  @Test func shutdownFromInsideTheGroupReturnsAtOnce() throws {
    let group = CoroutineLoopGroup(threads: 2)
    let task = co_launch(on: group) { () -> Int in
      group.shutdown()
      // Still running, and still able to start children that finish.
      let child = co_launch { 41 }
      return try co_await(child) + 1
    }
    #expect(try value(of: task) == 42)
    group.shutdown()  // from outside: waits for the loops to end
    #expect(group.loops.allSatisfy { !$0.isRunning })
  }

  @Test func aCoroutineOfTheGroupAwaitingOnOneOfItsLoopsRunsThere() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let task = co_launch(on: group) { () -> Int in
      var elsewhere = 0
      for round in 0..<200 {
        let target = group.loops[round % 2]
        let there = try co_await(on: target) { () -> Bool in
          try co_delay(0)  // and stays there when it suspends
          return CoroutineLoop.current === target
        }
        if !there { elsewhere += 1 }
      }
      return elsewhere
    }
    #expect(try value(of: task) == 0)
  }

  @Test func aGroupIsTheDefaultSchedulerOfItsCoroutinesAndTheirChildren() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let task = co_launch(on: group) { () -> Bool in
      let child = co_launch { SchedulerIdentity.isCurrent(group) == true }
      return try co_await(child)
    }
    #expect(try value(of: task))
  }

  @Test func moreReadyCoroutinesThanAQueueHoldsAllRun() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let count = StealQueue.capacity * 4
    let finished = Atomic<Int>(0)
    let parent = co_launch(on: group) {
      let children = (0..<count).map { _ in
        co_launch(on: group) {
          try co_delay(0)
          finished.add(1, ordering: .relaxed)
        }
      }
      for child in children { try co_await(child) }
    }
    try value(of: parent)
    let finishedCount = finished.load(ordering: .relaxed)
    #expect(finishedCount == count)
  }
}
