import Dispatch
import Foundation
import Testing

@testable import Coroutines

@Suite struct BoundTests {
  // MARK: Hopping

  @Test func aCoroutineHopsToTheValuesSchedulerAndBack() throws {
    let home = CoroutineTestLoop()
    let owner = CoroutineTestLoop()
    let counter = CoBound(0, on: owner, name: "counter")
    let task = co_launch(on: home) { () throws -> [String] in
      var seen = ["before: \(where_(home, owner))"]
      let value = try counter.withValue { value -> Int in
        seen.append("inside: \(where_(home, owner))")
        value += 1
        return value
      }
      seen.append("after: \(where_(home, owner)), value \(value)")
      return seen
    }
    home.runUntilIdle()  // starts the coroutine; it leaves for `owner`
    #expect(!task.isSettled)
    #expect(owner.readyJobs == 1)
    owner.runUntilIdle()  // runs the body there; the coroutine leaves for `home`
    #expect(home.readyJobs == 1)
    home.runUntilIdle()
    #expect(try task.result?.get() == ["before: home", "inside: owner", "after: home, value 1"])
    #expect(home.liveCoroutines == 0)
  }

  @Test func manyCoroutinesOnManyThreadsShareAValueWithoutALock() throws {
    let owner = DispatchQueue(label: "owner")
    let ownerKey = DispatchSpecificKey<String>()
    owner.setSpecific(key: ownerKey, value: "owner")
    let counter = CoBound(0, on: owner, name: "counter")
    let offOwner = CoBound(0, on: owner, name: "bodies run off the owner queue")
    let total = try CoroutineLoop.run { () throws -> Int in
      let loop = CoroutineLoop.current
      let workers = (0..<40).map { index in
        // Half on this loop, half on Dispatch's worker threads.
        co_launch(on: index.isMultiple(of: 2) ? nil : DispatchQueue.global()) { () throws -> Bool in
          for _ in 0..<100 {
            try counter.withValue { $0 += 1 }
            try offOwner.withValue {
              if DispatchQueue.getSpecific(key: ownerKey) != "owner" { $0 += 1 }
            }
          }
          return index.isMultiple(of: 2) ? CoroutineLoop.current === loop : true
        }
      }
      for worker in workers { #expect(try co_await(worker), "a coroutine did not come back home") }
      #expect(try offOwner.withValue { $0 } == 0)
      return try counter.withValue { $0 }
    }
    #expect(total == 4000)
  }

  @Test func aCancelledCoroutineDoesNotRunTheBody() throws {
    let home = CoroutineTestLoop()
    let owner = CoroutineTestLoop()
    let counter = CoBound(0, on: owner, name: "counter")
    let gate = CoPromise<Void>()
    let task = co_launch(on: home) {
      try co_await(gate)
      try counter.withValue { $0 += 1 }
    }
    home.runUntilIdle()
    task.cancel()
    home.runUntilIdle()
    owner.runUntilIdle()
    #expect(throws: CancellationError.self) { try task.result?.get() }
    #expect(owner.readyJobs == 0)
    let value = counter.perform { $0 }
    owner.runUntilIdle()
    #expect(try value.result?.get() == 0)
  }

  @Test func aJobOfTheSchedulerUsesTheValueDirectly() throws {
    let owner = CoroutineTestLoop()
    let names = CoBound([String](), on: owner, name: "names")
    owner.schedule { try! names.withValue { $0.append("from a job") } }
    owner.runUntilIdle()
    let read = names.perform { $0 }
    #expect(!read.isSettled, "perform always runs as a job")
    owner.runUntilIdle()
    #expect(try read.result?.get() == ["from a job"])
  }

  @Test func performRunsOnTheSchedulerAndSettlesItsFuture() throws {
    let owner = CoroutineTestLoop()
    let counter = CoBound(41, on: owner)
    let answer = counter.perform { value -> Int in
      #expect(CoroutineTestLoop.current === owner)
      value += 1
      return value
    }
    let failure = counter.perform { _ -> Int in throw CoroutineError.timedOut }
    owner.runUntilIdle()
    #expect(try answer.result?.get() == 42)
    #expect(throws: CoroutineError.timedOut) { try failure.result?.get() }
    #expect(counter.name == "Int")
  }

  // MARK: Creating and releasing on the scheduler

  @Test func aValueMadeOnItsSchedulerIsCreatedThere() throws {
    let home = CoroutineTestLoop()
    let owner = CoroutineTestLoop()
    let task = co_launch(on: home) { () throws -> Bool in
      let witness = try CoBound(on: owner, name: "witness") { Witness() }
      return try witness.withValue { $0.createdOn } === owner
    }
    while home.readyJobs + owner.readyJobs > 0 {
      home.runUntilIdle()
      owner.runUntilIdle()
    }
    #expect(try task.result?.get() == true)
  }

  @Test func aBoundObjectIsReleasedOnItsScheduler() {
    let owner = CoroutineTestLoop()
    let released = OrderLog<Bool>()
    var bound: CoBound<Witness>? = CoBound(Witness { released.append($0 === owner) }, on: owner)
    #expect(bound != nil)
    bound = nil  // on the test thread, not on `owner`
    #expect(released.values.isEmpty)
    owner.runUntilIdle()
    #expect(released.values == [true])
  }

  @Test func theDescriptionNamesTheValueAndItsScheduler() {
    let queue = DispatchQueue(label: "db")
    #expect(
      "\(CoBound(1, on: queue, name: "count"))" == "CoBound<Int> \"count\" on DispatchQueue \"db\"")
    #expect("\(CoBound("", on: CoroutineLoop.main))".hasSuffix("\"String\" on CoroutineLoop.main"))
    let loop = CoroutineTestLoop(seed: 3)
    #expect("\(CoBound(1, on: loop))".hasSuffix("on CoroutineTestLoop(seed: 3, now: 0.0)"))
  }

  // MARK: The samples of BoundObjects.md

  @Test func aCoroutineTakesAnAppleFromTheDatabaseQueue() throws {
    let database = DispatchQueue(label: "database")
    let stock = CoBound(["apples": 3], on: database, name: "stock")
    let left = try CoroutineLoop.run {
      try stock.withValue { stock -> Int in
        stock["apples", default: 0] -= 1
        return stock["apples", default: 0]
      }
    }
    #expect(left == 2)

    let count = stock.perform { $0["apples", default: 0] }
    #expect(try CoroutineLoop.run { try co_await(count) } == 2)
  }

  @Test func theAssemblyOnTwoQueues() throws {
    let ui = DispatchQueue(label: "ui")
    let database = DispatchQueue(label: "database")
    let settings = CoBound(Settings(), on: ui, name: "settings")
    let assembly = co_launch(on: ui) { () throws -> String in
      let store = try CoBound(on: database, name: "store") { () throws -> Store in
        // On the database queue; the UI queue is free, so hopping back to it just works.
        let path = try settings.withValue { $0.databasePath }
        return Store(path: path)
      }
      return try store.withValue { $0.path }
    }
    #expect(try CoroutineLoop.run { try co_await(assembly) } == "/tmp/app.sqlite")
  }

  @Test func theAssemblyOnTwoTestLoops() throws {
    let ui = CoroutineTestLoop()
    let database = CoroutineTestLoop()
    let settings = CoBound(Settings(), on: ui, name: "settings")
    let assembly = co_launch(on: ui) { () throws -> String in
      let store = try CoBound(on: database, name: "store") { () throws -> Store in
        Store(path: try settings.withValue { $0.databasePath })
      }
      return try store.withValue { $0.path }
    }
    while ui.readyJobs + database.readyJobs > 0 {
      ui.runUntilIdle()
      database.runUntilIdle()
    }
    #expect(try assembly.result?.get() == "/tmp/app.sqlite")
  }

  // MARK: The wrong thread

  #if DEBUG
    /// The check stops the process, so it runs in a child: Swift Testing's exit tests start this
    /// test binary again, run only the closure there and report how it ended and what it wrote
    /// to standard error. That works under `swift test` with no helper executable to build.
    @Test func aDirectCallFromTheWrongThreadStopsWithAMessage() async {
      let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        let counter = CoBound(0, on: DispatchQueue(label: "owner"), name: "counter")
        try counter.withValue { $0 += 1 }  // from the test's thread, not from "owner"
      }
      let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
      #expect(message.contains("CoBound<Int> \"counter\" belongs to DispatchQueue \"owner\""))
      #expect(message.contains("but withValue(_:) was called directly on thread "))
    }

    @Test func theMessageNamesTheCallingThread() async {
      let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        let owner = CoroutineTestLoop(seed: 9)
        let list = CoBound([Int](), on: owner, name: "list")
        let worker = Thread {
          // The kernel's name for this thread, which the message reads back. (Foundation's
          // `Thread.name` may skip it when the thread starts before `start()` returns.)
          try? "intruder".write(
            toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
          _ = try? list.withValue { $0.append(1) }
        }
        worker.start()
        DispatchSemaphore(value: 0).wait()  // the worker ends the process
      }
      let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
      #expect(message.contains("CoBound<Array<Int>> \"list\" belongs to CoroutineTestLoop(seed: 9"))
      #expect(message.contains("\"intruder\""))
    }
  #endif

  // MARK: The seed's deadlock cannot happen

  /// The seed's assembly: the UI side builds a session whose store must be created on the
  /// database's thread, and creating the store needs the UI's settings, which live on the UI's
  /// thread. Done with blocking calls, the UI thread waits for the database thread, which waits
  /// for the UI thread: a deadlock. Done with coroutines, each wait leaves its thread free.
  @Test func objectsThatNeedEachOtherWhileBeingCreatedDoNotDeadlock() throws {
    let ui = DispatchQueue.named("ui")
    let database = DispatchQueue.named("database")
    let settings = CoBound(Settings(), on: ui, name: "settings")
    let assembly = co_launch(on: ui) { () throws -> String in
      let store = try CoBound(on: database, name: "store") { () throws -> Store in
        // On the database queue. Hop back to `ui` for the settings: it is free, as the
        // assembly that started there is here now, not waiting there.
        let path = try settings.withValue { $0.databasePath }
        // And the UI keeps serving other work meanwhile: a job on it settles this promise.
        let uiIsFree = CoPromise<Void>()
        ui.async { uiIsFree.fulfill(()) }
        try co_await(uiIsFree)
        return Store(path: path)
      }
      return try store.withValue { "\($0.path) made on \($0.madeOn)" }
    }
    let finished = DispatchSemaphore(value: 0)
    assembly.whenComplete { _ in finished.signal() }
    // A bound, not a sleep: it only turns a deadlock into a failure instead of a hung run.
    try #require(finished.wait(timeout: .now() + 60) == .success, "the assembly deadlocked")
    #expect(try assembly.result?.get() == "/tmp/app.sqlite made on database")
  }

  @Test(arguments: [nil, 1, 2, 3] as [UInt64?])
  func theAssemblyTakesTheSameStepsOnTestLoops(seed: UInt64?) throws {
    let ui = CoroutineTestLoop(seed: seed)
    let database = CoroutineTestLoop(seed: seed)
    let steps = OrderLog<String>()
    let settings = CoBound(Settings(), on: ui, name: "settings")
    let assembly = co_launch(on: ui) { () throws -> String in
      steps.append("ui: assembling")
      let store = try CoBound(on: database, name: "store") { () throws -> String in
        steps.append("database: making the store")
        let path = try settings.withValue { settings -> String in
          steps.append("ui: reading the settings")
          return settings.databasePath
        }
        steps.append("database: store made")
        return path
      }
      steps.append("ui: assembled")
      return try store.withValue { $0 }
    }
    var turns = 0
    while ui.readyJobs + database.readyJobs > 0 {
      ui.runUntilIdle()
      database.runUntilIdle()
      turns += 1
    }
    #expect(try assembly.result?.get() == "/tmp/app.sqlite", "\(ui)")
    #expect(
      steps.values == [
        "ui: assembling", "database: making the store", "ui: reading the settings",
        "database: store made", "ui: assembled",
      ])
    #expect(turns <= 4)
    #expect(ui.liveCoroutines == 0)
  }
}

/// Which of two test loops the caller is on.
private func where_(_ home: CoroutineTestLoop, _ owner: CoroutineTestLoop) -> String {
  let current = CoroutineTestLoop.current
  return current === home ? "home" : current === owner ? "owner" : "elsewhere"
}

/// Remembers which test loop created it, and tells which one released it.
private final class Witness {
  let createdOn = CoroutineTestLoop.current
  private let onRelease: (CoroutineTestLoop?) -> Void

  init(onRelease: @escaping (CoroutineTestLoop?) -> Void = { _ in }) {
    self.onRelease = onRelease
  }

  deinit { onRelease(CoroutineTestLoop.current) }
}

private final class Settings {
  var databasePath = "/tmp/app.sqlite"
}

/// A store that must be created on the database queue.
private final class Store {
  let path: String
  let madeOn: String

  init(path: String) {
    self.path = path
    madeOn = DispatchQueue.currentLabel
  }
}

/// Tags the test's queues with their names, so code can tell which one runs it.
private let queueName = DispatchSpecificKey<String>()

extension DispatchQueue {
  fileprivate static func named(_ name: String) -> DispatchQueue {
    let queue = DispatchQueue(label: name)
    queue.setSpecific(key: queueName, value: name)
    return queue
  }

  fileprivate static var currentLabel: String { getSpecific(key: queueName) ?? "elsewhere" }
}
