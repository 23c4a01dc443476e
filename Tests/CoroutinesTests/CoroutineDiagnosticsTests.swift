import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// The live-coroutine dump (on request and on SIGQUIT) and the stall watchdog. Other tests run
/// at the same time, so each test looks only at coroutines with its own unique names.
@Suite struct CoroutineDiagnosticsTests {
  @Test func theDumpListsEveryLiveCoroutineWithStateSchedulerAndStack() throws {
    let tag = "dump-\(UUID().uuidString)"
    let mine = { @Sendable in
      CoroutineDiagnostics.liveCoroutines().filter { $0.name?.hasPrefix(tag) == true }
    }
    try CoroutineLoop.run {
      let gate = CoPromise<Void>()
      let started = CoPromise<Void>()
      let parked = co_launch(name: "\(tag) parked", stackSize: 128 * 1024) {
        started.fulfill(())
        try co_await(gate)
      }
      try co_await(started)
      let notYetStarted = co_launch(name: "\(tag) new") {}
      let snapshots = mine()  // before this coroutine suspends, so "new" has not run yet
      let selfView = try co_await(
        co_launch(name: "\(tag) looking") { mine().first { $0.name == "\(tag) looking" } })

      let parkedView = try #require(snapshots.first { $0.name == "\(tag) parked" })
      #expect(parkedView.state == "suspended")
      #expect(parkedView.stackSize == 128 * 1024)
      let used = try #require(parkedView.stackUsed)
      #expect(used > 0 && used <= 128 * 1024)
      #expect(parkedView.scheduler.hasPrefix("CoroutineLoop"))
      #expect(snapshots.first { $0.name == "\(tag) new" }?.state == "created")
      #expect(snapshots.first { $0.name == "\(tag) new" }?.stackUsed == nil)
      #expect(selfView?.state == "running")

      let dump = CoroutineDiagnostics.dump()
      #expect(dump.contains("\"\(tag) parked\" suspended; scheduler: CoroutineLoop"))
      #expect(dump.contains("stack: 131072 bytes"))

      parked.cancel()
      #expect(throws: CancellationError.self) { try co_await(parked) }
      try co_await(notYetStarted)
      #expect(mine().isEmpty)
    }
  }

  @Test func aCancelledCoroutineIsMarkedSoInTheDump() throws {
    let tag = "cancelled-\(UUID().uuidString)"
    try CoroutineLoop.run {
      let gate = CoPromise<Void>()
      let task = co_launch(name: tag) { try co_await(gate) }
      task.cancel()
      let view = CoroutineDiagnostics.liveCoroutines().first { $0.name == tag }
      #expect(view?.isCancelled == true)
      #expect(view.map { "\($0)" }?.contains("cancelled") == true)
      _ = try? co_await(task)
    }
  }

  @Test func theWatchdogReportsACoroutineThatBlocksItsThread() throws {
    let tag = "stall-\(UUID().uuidString)"
    let noticed = DispatchSemaphore(value: 0)
    let stalls = Mutex<[CoroutineStall]>([])
    CoroutineDiagnostics.startStallWatchdog(threshold: 0.05) { stall in
      guard stall.coroutine.name == tag else { return }
      stalls.withLock { $0.append(stall) }
      noticed.signal()
    }
    defer { CoroutineDiagnostics.stopStallWatchdog() }
    let woke = try CoroutineLoop.run {
      try co_await(
        co_launch(name: tag) {
          // Blocks its thread, as a `sleep` would, until the watchdog has noticed.
          noticed.wait(timeout: .now() + 60) == .success
        })
    }
    #expect(woke)
    let reported = stalls.withLock { $0 }
    #expect(reported.count == 1)
    #expect((reported.first?.seconds ?? 0) >= 0.05)
    #expect(reported.first?.description.contains("co_delay instead of sleep") == true)
    #expect(reported.first?.coroutine.state == "running")
  }

  @Test func aDumpIsPrintedOnSIGQUITWhenEnabled() async throws {
    let result = try await #require(
      processExitsWith: .success, observing: [\.standardErrorContent]
    ) {
      try Self.dumpOnSIGQUIT()
    }
    let output = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(output.contains("live coroutine"), "\(output)")
    #expect(output.contains("\"waiting for a reply\" suspended"), "\(output)")
    #expect(output.contains("\"waiting too\" suspended"), "\(output)")
    #expect(output.contains("DispatchQueue \"diagnostics\""), "\(output)")
  }

  /// In the child: parks two coroutines, sends itself SIGQUIT, waits for the dump, and lets
  /// both finish so that leak checkers see nothing left behind.
  static func dumpOnSIGQUIT() throws {
    CoroutineDiagnostics.dumpOnSIGQUIT()
    let dumped = DispatchSemaphore(value: 0)
    CoroutineDiagnostics.afterQuitDump.withLock { $0 = { dumped.signal() } }
    let queue = DispatchQueue(label: "diagnostics")
    let never = CoPromise<Void>()
    let parked = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    for name in ["waiting for a reply", "waiting too"] {
      let started = CoPromise<Void>()
      started.whenComplete { _ in queue.async { parked.signal() } }  // after it has parked
      co_launch(on: queue, name: name) {
        started.fulfill(())
        try co_await(never)
      }.whenComplete { _ in finished.signal() }
      parked.wait()
    }
    kill(getpid(), SIGQUIT)  // as `kill -QUIT` does: Dispatch threads, like this one, block it
    dumped.wait()
    never.fulfill(())
    finished.wait()
    finished.wait()
  }
}
