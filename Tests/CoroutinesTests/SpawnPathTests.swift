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
