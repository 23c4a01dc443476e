import Synchronization
import Testing

@testable import Coroutines

// Every sample of Docs/Coroutines.docc/Articles/CancellationAndScopes.md, verbatim, with just
// enough around it to run.

final class Connection: Sendable {
  let closes = Counter()
  func close() { closes.increment() }
}

struct Page: Equatable {
  let header: String
  let items: [String]
}

final class FeedScreen: Sendable {
  private let scope = CoScope()
  private let refreshCount = Mutex(0)

  var refreshes: Int { refreshCount.withLock { $0 } }

  func appear() {
    scope.launch { [weak self] in
      while true {
        try co_delay(10)
        self?.refreshCount.withLock { $0 += 1 }
      }
    }
  }
}

enum StorageError: Error { case diskFull }

final class Logger: Sendable {
  let lines = Journal<String>()
  func error(_ message: String) { lines.append(message) }
}

@Suite struct CancellationAndScopesArticleTests {
  @Test func howACoroutineIsCancelled() throws {
    let connection = Connection()
    let loop = CoroutineTestLoop()
    let driver = co_launch(on: loop) { () -> CoTask<Void> in
      let worker = co_launch { () -> Void in
        defer { connection.close() }
        try co_delay(60)
      }
      try co_delay(1)
      worker.cancel()
      return worker
    }
    loop.runUntilIdle()
    loop.advance(by: 1)
    #expect(isCancellation(value(driver.result)?.result))
    #expect(connection.closes.value == 1)
  }

  @Test func longComputationsAskWhetherToGoOn() throws {
    let crunched = Counter()
    func crunch(_ chunk: Int, into checksum: Int) -> Int {
      crunched.increment()
      return checksum &+ chunk
    }
    let chunks = Array(1...1000)
    let result = try CoroutineLoop.run { () -> Result<Int, any Error>? in
      let started = CoPromise<Void>()
      let stop = CoPromise<Void>()
      let task = co_launch { () -> Int in
        var checksum = 0
        started.fulfill(())
        try co_await(stop)  // the test cancels here, before any chunk
        for chunk in chunks {
          guard co_isActive() else { throw CancellationError() }
          checksum = crunch(chunk, into: checksum)
        }
        return checksum
      }
      try co_await(started)
      task.cancel()
      _ = try? co_await(task)
      return task.result
    }
    #expect(isCancellation(result))
    #expect(crunched.value == 0)
  }

  @Test func coIsActiveLetsAComputationFinish() throws {
    let chunks = [1, 2, 3]
    func crunch(_ chunk: Int, into checksum: Int) -> Int { checksum + chunk }
    let total = try CoroutineLoop.run { () -> Int in
      var checksum = 0
      for chunk in chunks {
        guard co_isActive() else { throw CancellationError() }
        checksum = crunch(chunk, into: checksum)
      }
      return checksum
    }
    #expect(total == 6)
  }

  @Test func parentsAndChildren() throws {
    let unwound = Journal<String>()
    let loadHeader = { @Sendable () throws -> String in
      defer { unwound.append("header") }
      try co_delay(60)
      return "header"
    }
    let loadItems = { @Sendable () throws -> [String] in
      defer { unwound.append("items") }
      try co_await(CoPromise<Void>())
      return []
    }
    let loop = CoroutineTestLoop()
    let driver = co_launch(on: loop) { () -> CoTask<Page> in
      let page = co_launch { () -> Page in
        let header = co_launch { try loadHeader() }
        let items = co_launch { try loadItems() }
        return Page(header: try co_await(header), items: try co_await(items))
      }
      try co_delay(1)
      page.cancel()
      return page
    }
    loop.runUntilIdle()
    loop.advance(by: 1)
    #expect(isCancellation(value(driver.result)?.result))
    #expect(Set(unwound.entries) == ["header", "items"])
    #expect(loop.liveCoroutines == 0)
  }

  @Test func detached() throws {
    let uploaded = CoPromise<Void>()
    let uploadLogs = { @Sendable () throws in uploaded.fulfill(()) }
    try CoroutineLoop.run {
      let launcher = co_launch { () -> Void in
        co_launch(detached: true) { try uploadLogs() }
        throw CancellationError()  // the launcher fails: a child would be cancelled, this is not
      }
      _ = try? co_await(launcher)
      try co_await(uploaded)
    }
    #expect(uploaded.isSettled)
  }

  @Test func aScreenWithAScope() throws {
    let refreshesSeen = try CoroutineLoop.run { () -> Int in
      var screen: FeedScreen? = FeedScreen()
      screen?.appear()
      try co_delay(0)
      let refreshes = screen?.refreshes ?? -1
      // Releasing the screen cancels its 10-second refresh loop; `run` returns at once.
      screen = nil
      return refreshes
    }
    #expect(refreshesSeen == 0)
  }

  @Test func otherMembers() throws {
    let socket = Connection()
    let files = ["a", "b"]
    let sendAll = { @Sendable (files: [String]) throws -> Int in
      try co_await(CoPromise<Void>())
      return files.count
    }
    let upload = try CoroutineLoop.run { () -> Result<Int, any Error>? in
      let scope = CoScope()
      let upload = co_launch { try sendAll(files) }.added(to: scope)
      scope.onCancel { socket.close() }
      try co_delay(0)
      scope.cancel()
      _ = try? co_await(upload)
      return upload.result
    }
    #expect(isCancellation(upload))
    #expect(socket.closes.value == 1)
  }

  @Test func aScopeWithADeadline() throws {
    let clock = CoroutineTestLoop()
    let unwound = Counter()
    let syncEverything = { @Sendable () throws -> Void in
      defer { unwound.increment() }
      while true { try co_delay(1) }
    }
    let holder = co_launch(on: clock) { () -> CoScope in
      let sync = CoScope(timeout: 5)
      sync.launch { try syncEverything() }
      return sync
    }
    clock.runUntilIdle()
    let scope = value(holder.result)
    clock.advance(by: 4.5)
    #expect(scope?.isCancelled == false)
    #expect(unwound.value == 0)
    clock.advance(by: 0.5)
    #expect(scope?.isCancelled == true)
    #expect(unwound.value == 1)
    #expect(clock.pendingTimers == 0)
  }

  @Test func aWaitWithADeadline() throws {
    let loadProfile = { () -> CoFuture<String> in
      co_launch(detached: true) { () -> String in
        try co_delay(0)
        return "profile"
      }
    }
    try CoroutineLoop.run {
      let user = try co_await(loadUser(id: 42), timeout: 2)
      let profile = try co_await(loadProfile().timeout(2))
      #expect(user.id == 42)
      #expect(profile == "profile")
    }
  }

  @Test func theDefaultLine() {
    #expect(
      CoUnhandledErrors.message(coroutineName: "uploader", error: StorageError.diskFull)
        == "swift-coroutines: unhandled error in coroutine 'uploader': diskFull")
  }

  @Test func replacingTheProcessWideHandler() throws {
    let logger = Logger()
    let previous = CoUnhandledErrors.handler
    defer { CoUnhandledErrors.handler = previous }
    CoUnhandledErrors.handler = { name, error in logger.error("\(name ?? "coroutine"): \(error)") }
    CoUnhandledErrors.report(name: "uploader", error: StorageError.diskFull, to: nil)
    // `contains`: while the handler is swapped, stray errors of tests running in parallel land
    // here too.
    #expect(logger.lines.entries.contains("uploader: diskFull"))
  }

  @Test func catchingATestsOwnErrors() throws {
    let reported = CoPromise<String>()
    try CoUnhandledErrors.withHandler({ _, error in reported.fulfill("\(error)") }) {
      try CoroutineLoop.run { _ = co_launch(name: "worker") { throw Failure.disk } }
    }
    #expect(value(reported.result) == "disk")
  }
}
