import Foundation
import Testing

@testable import Coroutines

@Suite struct LaunchTests {
  /// A body written on the main actor and launched on a global queue is `@Sendable`, so it does
  /// not take on the main actor's isolation: the closure inside it runs on the queue's thread
  /// (a body that took it on would trap there, checking for the main actor).
  @MainActor @Test func aBodyWrittenOnTheMainActorRunsItsClosuresOnAGlobalQueue() async throws {
    let task = co_launch(on: DispatchQueue.global()) { () -> [Int] in
      #expect(!Thread.isMainThread)
      return [1, 2, 3].map { $0 * 2 }
    }
    #expect(try await task.value == [2, 4, 6])
  }

  @MainActor @Test func aBodyWrittenInAMainActorTypeRunsItsClosuresOnAGlobalQueue() async throws {
    #expect(try await InboxScreen().loadTitle().value == "INBOX")
  }

  @Test func aDetachedCoroutineIsNotWaitedForNorCancelledWithItsLauncher() throws {
    let size = TestStacks.uniqueSize()
    let gate = CoPromise<Void>()
    let (launcherResult, detachedRan) = try CoroutineLoop.run {
      () -> (Result<Void, any Error>?, Bool) in
      let holder = CoPromise<CoTask<Int>>()
      let launcher = co_launch(stackSize: size) { () -> Void in
        holder.fulfill(
          co_launch(stackSize: size, detached: true) { () -> Int in
            try co_await(gate)
            return 1
          })
        try co_await(CoPromise<Void>())
      }
      let detached = try co_await(holder)
      launcher.cancel()
      _ = try? co_await(launcher)
      let launcherResult = launcher.result
      #expect(detached.result == nil)
      gate.fulfill(())
      return (launcherResult, try co_await(detached) == 1)
    }
    #expect(isCancellation(launcherResult))
    #expect(detachedRan)
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func aDetachedCoroutineKeepsTheUnhandledErrorHandler() throws {
    let log = Journal<String>()
    try CoUnhandledErrors.withHandler({ name, _ in log.append(name ?? "-") }) {
      try CoroutineLoop.run {
        _ = co_launch(name: "detached", detached: true) { () -> Void in throw Failure.disk }
      }
    }
    #expect(log.entries == ["detached"])
  }

  @Test func aTopLevelLaunchHasNoParent() throws {
    let loop = CoroutineTestLoop()
    let task = co_launch(on: loop) { 1 }
    #expect(task.coroutine.attachment === task)
    task.cancel()
    loop.runUntilIdle()  // the cancelled coroutine finishes; nothing is left behind
  }

  @Test func theSharedStackSample() throws {
    let connection = CoPromise<String>()
    let served = Journal<String>()
    let serve = { @Sendable (connection: CoPromise<String>) throws in
      served.append(try co_await(connection))
    }
    try CoroutineLoop.run {
      co_launch(stack: .shared) { try serve(connection) }
      connection.fulfill("request")
    }
    #expect(served.entries == ["request"])
  }
}

/// A `@MainActor` type that launches work on a global queue: the body copies what it needs out
/// of the main actor's state before it leaves.
@MainActor private final class InboxScreen {
  var title = "Inbox"

  func loadTitle() -> CoTask<String> {
    let title = self.title
    return co_launch(on: DispatchQueue.global()) { [title].map { $0.uppercased() }[0] }
  }
}
