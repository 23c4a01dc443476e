import Dispatch
import Synchronization
import Testing

@testable import Coroutines

// Every sample of Docs/Coroutines.docc/Articles/AwaitingPromises.md, verbatim, with just enough
// around it to run.

struct User: Sendable, Equatable {
  let id: Int
  let name: String
  var isActive = true
}

/// Loads a user in a coroutine of its own.
func loadUser(id: Int) -> CoFuture<User> {
  co_launch(detached: true) { () -> User in
    try co_delay(0)
    return User(id: id, name: "user\(id)")
  }
}

func loadAvatar(for user: User) -> CoFuture<[UInt8]> {
  fulfilled(Array(repeating: 7, count: user.id))
}

/// A callback API that answers on a queue of its own.
final class LegacyClient: Sendable {
  private let queue = DispatchQueue(label: "legacy client")
  func fetch(_ path: String, completion: @escaping @Sendable (Result<String, any Error>) -> Void) {
    queue.async { completion(.success("contents of \(path)")) }
  }
  /// The `(value?, error?)` shape: bytes, or an error for a path that does not end in `.png`.
  func download(
    _ path: String, completion: @escaping @Sendable ([UInt8]?, (any Error)?) -> Void
  ) {
    queue.async {
      if path.hasSuffix(".png") {
        completion(Array(path.utf8), nil)
      } else {
        completion(nil, CoroutineError.validationFailed)
      }
    }
  }
}

final class Spinner: Sendable {
  private let spinning = Mutex(true)
  var isSpinning: Bool { spinning.withLock { $0 } }
  func stop() { spinning.withLock { $0 = false } }
}

struct Mirror {
  let name: String
  let delay: Double
  func fetch() -> CoFuture<String> {
    co_launch(detached: true) { [self] () -> String in
      try co_delay(delay)
      return name
    }
  }
}

@Suite struct AwaitingPromisesArticleTests {
  @Test func awaitAFuture() throws {
    try CoroutineLoop.run {
      let user = try co_await(loadUser(id: 42))
      let same = try loadUser(id: 42).await()
      #expect(user == same)
    }
  }

  @Test func settleAPromiseYourself() throws {
    try CoroutineLoop.run {
      let promise = CoPromise<Int>()
      DispatchQueue.global().async { promise.fulfill(42) }
      let answer = try co_await(promise)
      #expect(answer == 42)
    }
  }

  @Test func wrapACallback() throws {
    let client = LegacyClient()
    try CoroutineLoop.run {
      let body: String = try co_await { done in client.fetch("/feed", completion: done) }
      #expect(body == "contents of /feed")
    }
  }

  @Test func wrapACallbackOfEitherShape() throws {
    let client = LegacyClient()
    try CoroutineLoop.run {
      let icon: [UInt8] = try co_await { done in client.download("/icon.png", completion: done) }
      let size: Int = try co_await { done in
        client.download("/logo.png") { bytes, error in done(bytes?.count, error) }
      }
      #expect(icon == Array("/icon.png".utf8))
      #expect(size == "/logo.png".utf8.count)
      #expect(throws: CoroutineError.validationFailed) {
        let _: [UInt8] = try co_await { done in client.download("/notes.txt", completion: done) }
      }
    }
  }

  @Test func waitWithADeadline() throws {
    try CoroutineLoop.run {
      let user = try co_await(loadUser(id: 42), timeout: 2)
      #expect(user.id == 42)
    }
  }

  @Test func operators() throws {
    let spinner = Spinner()
    try CoroutineLoop.run {
      let avatarSize = loadUser(id: 42)
        .validate { $0.isActive }
        .flatMap { user in loadAvatar(for: user) }
        .map { $0.count }
        .recover { _ in 0 }
        .always { spinner.stop() }
      let size = try co_await(avatarSize)
      #expect(size == 42)
    }
    #expect(!spinner.isSpinning)
  }

  @Test func whereCallbacksRun() throws {
    let uiQueue = DispatchQueue(label: "ui")
    try CoroutineLoop.run {
      let greeting = loadUser(id: 42).map(on: uiQueue) { "Hello, \($0.name)" }
      let text = try co_await(greeting)
      #expect(text == "Hello, user42")
    }
  }

  @Test func combinators() throws {
    let mirrorA = Mirror(name: "a", delay: 0)
    let mirrorB = Mirror(name: "b", delay: 600)
    let guest = User(id: 3, name: "guest")
    try CoroutineLoop.run {
      let users = try co_await(CoFuture.all([loadUser(id: 1), loadUser(id: 2)]))
      let fastest = try co_await(CoFuture.race([mirrorA.fetch(), mirrorB.fetch()]))
      let firstWorking = try co_await(CoFuture.any([mirrorA.fetch(), mirrorB.fetch()]))
      let (owner, picture) = try co_await(loadUser(id: 1).zip(loadAvatar(for: guest)))
      #expect(users.map(\.id) == [1, 2])
      #expect(fastest == "a")
      #expect(firstWorking == "a")
      #expect(owner.id == 1)
      #expect(picture.count == 3)
    }
  }

  @Test func collectionsOfWork() throws {
    let ids = Array(1...100)
    let orders = [3, 1, 2]
    let submit = { (order: Int) in fulfilled("receipt \(order)") }
    let price = { (order: Int) in fulfilled(order * 10) }
    try CoroutineLoop.run {
      let names = try co_await(CoFuture.all(ids, limit: 4) { loadUser(id: $0).map(\.name) })
      let receipts = try co_await(CoFuture.series(orders) { order in submit(order) })
      let total = try co_await(CoFuture.reduce(orders.map(price), 0, +))
      #expect(names.count == 100)
      #expect(names.first == "user1")
      #expect(receipts == ["receipt 3", "receipt 1", "receipt 2"])
      #expect(total == 60)
    }
  }

  @Test func retry() throws {
    let url = "https://example.com/"
    let attempts = Counter()
    let fetchPage = { (url: String) -> CoFuture<String> in
      attempts.increment() < 3 ? rejected(Failure.disk) : fulfilled("page at \(url)")
    }
    // On a virtual-time test loop, so the two half-second delays take no time.
    let clock = CoroutineTestLoop()
    let task = co_launch(on: clock) { () -> String in
      let page = try co_await(CoFuture.retry(3, delay: 0.5) { fetchPage(url) })
      return page
    }
    clock.runUntilIdle()
    clock.advance(by: 0.5)
    #expect(attempts.value == 2)
    clock.advance(by: 0.5)
    #expect(value(task.result) == "page at https://example.com/")
    #expect(attempts.value == 3)
  }

  @Test func cancellationFlowsUpstream() throws {
    try CoroutineLoop.run {
      let user = loadUser(id: 42)
      let avatarSize = user.flatMap { user in loadAvatar(for: user) }.map { $0.count }
      avatarSize.cancel()
      _ = try? co_await(user)
      #expect(wasCancelled(user.result))
    }
  }

  @Test func shareAFutureWithACombinator() throws {
    let shared = CoPromise<User>()
    let backup = CoPromise<User>()
    let copy = CoPromise<User>()
    shared.whenComplete(copy.resolve)
    let winner = CoFuture.race([copy, backup])
    winner.cancel()
    #expect(isCancellation(copy.result))
    #expect(shared.result == nil)
  }
}
