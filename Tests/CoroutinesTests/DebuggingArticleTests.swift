import Foundation
import Testing

@testable import Coroutines

/// The samples of Docs/Coroutines.docc/Articles/Debugging.md that show seeing inside.
@Suite struct DebuggingArticleTests {
  @Test func theHealthCheckNamesEachStuckWaitWithItsReasonAndFrames() throws {
    let tag = "health-\(UUID().uuidString)"
    let loop = CoroutineTestLoop()
    let never = CoPromise<Int>()
    let stuck = co_launch(on: loop, name: tag) { _ = try co_await(never) }
    loop.advance(by: 61)
    var lines: [String] = []
    func log(_ line: String) { lines.append(line) }
    for stuck in CoroutineDiagnostics.waitingLongerThan(60) where stuck.name == tag {
      let waited = Int(stuck.waitingFor ?? 0)
      log("\(stuck.name ?? "?") has waited \(waited) s for \(stuck.waitReason ?? "?")")
      log(stuck.backtrace.prefix(3).joined(separator: " <- "))
    }
    #expect(lines.first == "\(tag) has waited 61 s for future")
    #expect(lines.count == 2 && lines[1].contains(" <- "), "\(lines)")
    stuck.cancel()
    loop.runUntilIdle()
  }

  @Test func theDeadlockSampleFindsTheServerWaitingForRequests() throws {
    var printed: [String] = []
    func print(_ value: Any) { printed.append("\(value)") }
    let loop = CoroutineTestLoop()
    let requests = CoChannel<Int>()
    co_launch(on: loop, name: "server") {
      for request in requests { Swift.print("request \(request)") }
    }
    loop.runUntilIdle()
    do {
      try loop.checkForDeadlock()
    } catch {
      print(error)  // … "server" [channel receive, 0.0 s]: and its frames
    }
    requests.close()
    loop.runUntilIdle()
    #expect(printed.count == 1)
    #expect(printed.first?.contains("\"server\" [channel receive, 0.0 s]:") == true)
    #expect(loop.liveCoroutines == 0)
  }
}
