import Foundation

extension CoroutineLoop {
  /// Runs `body` in a coroutine on a loop driven by the calling thread, until that coroutine
  /// and every other coroutine of the loop have finished and no timer is pending. Returns the
  /// body's value or rethrows its error.
  ///
  /// On the main thread this drives ``main``; on any other thread a fresh loop, so several
  /// threads (parallel tests, say) may each be inside `run` at once.
  ///
  /// - Parameters:
  ///   - stackSize: Bytes of stack for `body`'s coroutine, as for
  ///     ``co_launch(on:name:stackSize:_:)``; ``CoroutineStack/defaultSize`` when nil.
  ///   - body: The program's top-level coroutine. It runs on the calling thread (this loop is in
  ///     no group, so nothing moves it), so it may capture anything; the coroutines it launches
  ///     are checked as their `co_launch` form says (`sending` or `@Sendable`).
  public static func run<T>(stackSize: Int? = nil, _ body: @escaping () throws -> T) throws -> T {
    let loop = Thread.isMainThread && !main.isRunning ? main : CoroutineLoop()
    // The body runs on this thread, so it may capture anything; what it launches is checked
    // at its own `co_launch`, which cannot know that its scheduler is this lone loop.
    let task = launchCoroutine(
      on: loop, name: "CoroutineLoop.run", stackSize: stackSize, stack: nil, detached: false, body)
    loop.run()
    guard let result = task.result else {
      coStop("CoroutineLoop.run: the loop went idle before its body finished")
    }
    return try result.get()
  }
}
