import Dispatch
import Foundation
import Testing

@testable import Coroutines

// Every sample of Docs/Coroutines.docc/Articles/SwiftConcurrency.md, verbatim, with just enough
// around it to run.

actor API {
  func user(id: Int) async throws -> User { User(id: id, name: "user\(id)") }
}

@Suite struct SwiftConcurrencyArticleTests {
  @Test func fromACoroutine() async throws {
    let api = API()
    let user = try await runLoopOnOwnThread { () -> User in
      let user = try co_await { try await api.user(id: 42) }
      return user
    }
    #expect(user.id == 42)
  }

  @Test func fromAsyncCode() async throws {
    let queue = DispatchQueue(label: "files")
    let sumFiles = { @Sendable () throws -> Int in
      try co_delay(0)
      return 10
    }
    let total = try await co_launch(on: queue) { try sumFiles() }.value
    #expect(total == 10)
  }

  @Test func cancellingFromAsyncCode() async throws {
    let queue = DispatchQueue(label: "numbers")
    let started = CoPromise<Void>()
    let unwound = CoPromise<Void>()
    let crunchNumbers = { @Sendable () throws -> Int in
      started.fulfill(())
      defer { unwound.fulfill(()) }
      try co_delay(600)
      return 0
    }
    let work = Task { try await co_launch(on: queue) { try crunchNumbers() }.value }
    work.cancel()
    let outcome: Result<Int, any Error>
    do { outcome = .success(try await work.value) } catch { outcome = .failure(error) }
    // Cancelled before its coroutine ran, or unwound from its 10-minute delay: never finished.
    #expect(wasCancelled(outcome))
    #expect(started.isSettled == unwound.isSettled)
  }

  @Test func aLoopOnAThreadOfItsOwn() async throws {
    let compute: @Sendable () throws -> Int = {
      try co_delay(0)
      return 42
    }
    let answer = try await withCheckedThrowingContinuation { done in
      Thread { done.resume(with: Result { try CoroutineLoop.run { try compute() } }) }.start()
    }
    #expect(answer == 42)
  }
}
