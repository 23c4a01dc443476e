import Dispatch
import Synchronization
import Testing

@testable import Coroutines

// Copies of the code samples in the README's opening and in Docs/Coroutines.docc (the landing
// page, GettingStarted, CoroutinesSchedulersAndLoop, Migrating). When a sample changes, change
// its copy: if the API moves under a sample, this file stops compiling or a test fails.

// MARK: Coroutines.md

/// Stands in for the `http` client of the landing page's sample.
private struct DocHTTP {
  func get(_ path: String, completion: @escaping @Sendable (Result<String, any Error>) -> Void) {
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.001) { completion(.success(path)) }
  }
}

// MARK: CoroutinesSchedulersAndLoop.md, "Sendable bodies"

struct Mail: Sendable {
  var isRead: Bool
}

@MainActor final class Inbox {
  var title = "Inbox"

  func countUnread(in mail: [Mail]) -> CoTask<Int> {
    co_launch(on: DispatchQueue.global()) {
      mail.filter { !$0.isRead }.count  // on a Dispatch thread, not the main actor
    }
  }
}

@Suite struct DocSamplesTests {
  @Test func landingPage() throws {
    let http = DocHTTP()
    let feed = try CoroutineLoop.run { () -> String in
      let data: String = try co_await { done in http.get("feeds/swift.json", completion: done) }
      try co_delay(0.01)  // a timer on the loop, not a sleeping thread
      return "parsed \(data)"
    }
    #expect(feed == "parsed feeds/swift.json")
  }

  // MARK: GettingStarted.md

  @Test func gettingStartedRunACoroutine() throws {
    let answer = try CoroutineLoop.run { () -> Int in
      try co_delay(0.01)  // suspends the coroutine; the thread runs timers meanwhile
      return 42
    }
    #expect(answer == 42)
  }

  @Test func gettingStartedAwaitACallbackAPI() throws {
    let titles = try CoroutineLoop.run { () -> [String] in
      var titles: [String] = []
      for url in ["a.example", "b.example"] {
        let title: String = try co_await { done in fetchTitle(url, completion: done) }
        titles.append(title)
      }
      return titles
    }
    #expect(titles == ["Title of a.example", "Title of b.example"])
  }

  @Test func gettingStartedAwaitAPromise() throws {
    let doubled = try CoroutineLoop.run { try co_await(loadNumber()) * 2 }
    #expect(doubled == 14)
  }

  @Test func gettingStartedLaunchMoreCoroutines() throws {
    let total = try CoroutineLoop.run { () -> Int in
      let tasks = (1...3).map { n in
        co_launch { () -> Int in
          try co_delay(0.01 * Double(n))
          return n * 10
        }
      }
      return try tasks.reduce(0) { sum, task in sum + (try task.await()) }
    }
    #expect(total == 60)
  }

  @Test func gettingStartedCancellation() throws {
    // The sample prints; its copy records what it would print, to check it and keep the test
    // run's output clean.
    let printed = Mutex<[String]>([])
    let print: @Sendable (String) -> Void = { line in printed.withLock { $0.append(line) } }
    let outcome = try CoroutineLoop.run { () -> String in
      let slow = co_launch { () -> String in
        defer { print("cleaned up") }
        try co_delay(10)
        return "finished"
      }
      try co_delay(0.01)
      slow.cancel()
      do {
        return try slow.await()
      } catch is CancellationError {
        return "cancelled"
      }
    }
    #expect(outcome == "cancelled")
    #expect(printed.withLock { $0 } == ["cleaned up"])
  }

  // MARK: CoroutinesSchedulersAndLoop.md

  @Test func customScheduler() throws {
    let scheduler = CountingScheduler()
    let value = try CoroutineLoop.run { () -> Int in
      try co_launch(on: scheduler) { () -> Int in
        try co_delay(0.001)
        return 5
      }.await()
    }
    #expect(value == 5)
    #expect(scheduler.jobsRun >= 2, "a start and a resume, at least")
  }

  @Test func defaultSchedulers() throws {
    let worker = DispatchQueue(label: "worker")
    let result = try CoroutineLoop.run { () -> String in
      let child = co_launch { "on the loop" }  // inherits the loop
      let elsewhere = co_launch(on: worker) { "on the worker queue" }
      return try child.await() + ", " + elsewhere.await()
    }
    #expect(result == "on the loop, on the worker queue")
  }

  @MainActor @Test func sendableBodies() async throws {
    let inbox = Inbox()
    let unread = inbox.countUnread(in: [
      Mail(isRead: false), Mail(isRead: true), Mail(isRead: false),
    ])
    #expect(try await unread.value == 2)
  }

  @Test func sendingBodies() throws {
    let group = CoroutineLoopGroup(threads: 2)
    let total = try CoroutineLoop.run {
      try co_await(on: group) { () -> Int in
        let children = (0..<4).map { _ in
          co_launch { () -> Int in
            var count = 0  // each child counts in a variable of its own
            for _ in 0..<100_000 { count += 1 }
            return count
          }
        }
        return try children.reduce(0) { try $0 + co_await($1) }
      }
    }
    group.shutdown()
    // total == 400_000
    #expect(total == 400_000)
  }

  @Test func movingForAWhile() throws {
    let checksum = try CoroutineLoop.run { () -> Int in
      let bytes = try co_await(on: DispatchQueue.global()) {
        (0..<100_000).reduce(0) { ($0 &* 31 &+ $1) & 0xffff }  // runs on a Dispatch thread
      }
      return bytes  // back on the loop
    }
    #expect(checksum == (0..<100_000).reduce(0) { ($0 &* 31 &+ $1) & 0xffff })
  }

  @Test func drivingALoopByHand() throws {
    let loop = CoroutineLoop()
    let task = co_launch(on: loop) { () -> Int in
      try co_delay(0.01)
      return 1
    }
    loop.run()  // returns when the loop is idle
    #expect(try task.result?.get() == 1)
  }

  /// Also the sample of `CoroutineLoopGroup`'s doc comment and of the README's "Every core".
  @Test func everyCoreALoopGroup() throws {
    let group = CoroutineLoopGroup(threads: 2)
    let total = try CoroutineLoop.run { () -> Int in
      let halves = [0, 1].map { half in
        co_launch(on: group) { (0..<1_000_000).reduce(half, &+) }  // both cores at once
      }
      return try halves.reduce(0) { try $0 &+ co_await($1) }
    }
    group.shutdown()  // lets the group's coroutines finish, then joins its threads
    #expect(total == 2 * (0..<1_000_000).reduce(0, &+) + 1)
  }

  // MARK: Migrating.md

  @Test func aPromiseChainRewritten() throws {
    let avatar = try CoroutineLoop.run { () -> String in
      do {
        let user = try co_await(fetchUser(7))
        return try co_await(fetchAvatar(user))
      } catch {
        return "placeholder.png"
      }
    }
    #expect(avatar == "user7.png")
  }

  @Test func aCoobjcCoroutineRewritten() throws {
    let shown = try CoroutineLoop.run { () -> String? in
      guard let data = try? co_await(fetchData()) else { return nil }
      return "showing \(data)"
    }
    #expect(shown == "showing data")
  }

  // MARK: README.md, the opening comparison

  @Test func readmeOpeningCoroutineHalf() throws {
    let shown = Mutex<[String]>([])
    let show: @Sendable (String) -> Void = { line in shown.withLock { $0.append(line) } }
    let client = ReadmeClient()
    let parser = ReadmeParser()
    let database = ReadmeDatabase()
    let url = "feed.json"
    try CoroutineLoop.run {  // runs the loop on this thread until the coroutine is done
      let data = try co_await(client.fetch(url))
      let feed = try co_await(parser.parse(data))
      show(try co_await(database.save(feed)))
    }
    #expect(shown.withLock { $0 } == ["saved parsed feed.json"])
    // The callback half only has to compile: it hops to the main queue, which tests do not run.
    _ = readmeOpeningCallbackHalf
  }
}

// MARK: Helpers the samples define

/// A callback API, as found in the wild.
private func fetchTitle(
  _ url: String, completion: @escaping @Sendable (Result<String, any Error>) -> Void
) {
  DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) {
    completion(.success("Title of \(url)"))
  }
}

private func loadNumber() -> CoFuture<Int> {
  let promise = CoPromise<Int>()
  DispatchQueue.global().async { promise.fulfill(7) }
  return promise
}

/// Runs jobs on a private queue and counts them.
private final class CountingScheduler: CoroutineScheduler {
  private let queue = DispatchQueue(label: "counted")
  private let count = Mutex(0)

  var jobsRun: Int { count.withLock { $0 } }

  func schedule(_ job: @escaping @Sendable () -> Void) {
    count.withLock { $0 += 1 }
    queue.async(execute: job)
  }
}

private func fetchUser(_ id: Int) -> CoFuture<String> {
  let promise = CoPromise<String>()
  DispatchQueue.global().async { promise.fulfill("user\(id)") }
  return promise
}

private func fetchAvatar(_ user: String) -> CoFuture<String> {
  let promise = CoPromise<String>()
  DispatchQueue.global().async { promise.fulfill("\(user).png") }
  return promise
}

private func fetchData() -> CoFuture<String> {
  let promise = CoPromise<String>()
  DispatchQueue.global().async { promise.fulfill("data") }
  return promise
}

// The README's opening sample uses three services with both a callback and a future API.

private struct ReadmeClient: Sendable {
  func fetch(_ url: String, _ done: @escaping @Sendable (String?, (any Error)?) -> Void) {
    DispatchQueue.global().async { done(url, nil) }
  }
  func fetch(_ url: String) -> CoFuture<String> {
    let promise = CoPromise<String>()
    fetch(url) { data, error in promise.resolve(data.map(Result.success) ?? .failure(error!)) }
    return promise
  }
}

private struct ReadmeParser: Sendable {
  func parse(_ data: String, _ done: @escaping @Sendable (String?, (any Error)?) -> Void) {
    DispatchQueue.global().async { done("parsed \(data)", nil) }
  }
  func parse(_ data: String) -> CoFuture<String> {
    let promise = CoPromise<String>()
    parse(data) { feed, error in promise.resolve(feed.map(Result.success) ?? .failure(error!)) }
    return promise
  }
}

private struct ReadmeDatabase: Sendable {
  func save(_ feed: String, _ done: @escaping @Sendable (String?, (any Error)?) -> Void) {
    DispatchQueue.global().async { done("saved \(feed)", nil) }
  }
  func save(_ feed: String) -> CoFuture<String> {
    let promise = CoPromise<String>()
    save(feed) { id, error in promise.resolve(id.map(Result.success) ?? .failure(error!)) }
    return promise
  }
}

@Sendable private func show(_ error: any Error) {}
@Sendable private func show(_ id: String?, _ error: (any Error)?) {}

private let readmeOpeningCallbackHalf: @Sendable () -> Void = {
  let client = ReadmeClient()
  let parser = ReadmeParser()
  let database = ReadmeDatabase()
  let url = "feed.json"
  // Callbacks: a pyramid.
  client.fetch(url) { data, error in
    guard let data else { return show(error!) }
    parser.parse(data) { feed, error in
      guard let feed else { return show(error!) }
      database.save(feed) { id, error in
        DispatchQueue.main.async { show(id, error) }
      }
    }
  }
}
