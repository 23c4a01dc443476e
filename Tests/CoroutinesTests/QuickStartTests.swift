import Dispatch
import Testing

@testable import Coroutines

// A copy of the README's quick start: if it stops compiling or changes behaviour, this fails.

/// A callback API, as found in the wild.
private func loadGreeting(_ completion: @escaping @Sendable (Result<String, any Error>) -> Void) {
  DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) { completion(.success("hello")) }
}

@Test func theReadmeQuickStartRunsAsWritten() throws {
  let message = try CoroutineLoop.run { () -> String in
    let greeting: String = try co_await { done in loadGreeting(done) }  // wrap a callback
    try co_delay(0.01)  // a timer, not a sleep

    let promise = CoPromise<String>()  // settle from any thread
    DispatchQueue.global().async { promise.fulfill("world") }
    let name = try co_await(promise)

    let task = co_launch { () -> Int in 6 * 7 }  // a child coroutine
    return "\(greeting), \(name): \(try task.await())"
  }
  #expect(message == "hello, world: 42")
}

@Test func theReadmeTestLoopSampleRunsAsWritten() throws {
  let loop = CoroutineTestLoop()
  let task = co_launch(on: loop) { () throws -> String in
    try co_delay(30)
    return "done"
  }
  loop.advance(by: 29)  // nothing yet
  #expect(task.result == nil)
  loop.advance(by: 1)  // task.result is now .success("done")
  #expect(try task.result?.get() == "done")
}
