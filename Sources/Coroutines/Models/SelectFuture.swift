import Synchronization

/// `await(_:)` in a select: a case won by a future's settling rather than by a channel.
///
/// It has a lock of its own, so that the select takes it with the channels' locks; nobody
/// else takes it. Its waiter is a callback on the future, which claims the selecting
/// coroutine's wait like a channel operation would, and does nothing once the case is gone or
/// the wait was won by something else.
final class SelectFuture<T, Result>: SelectCase, @unchecked Sendable {
  // `won` is atomic; the rest is immutable, or touched only by the selecting coroutine.
  let lock = ChannelLock()
  private let future: CoFuture<T>
  private let handler: (T) throws -> Result
  private let won = Atomic<Bool>(false)
  private var immediate = false

  init(future: CoFuture<T>, handler: @escaping (T) throws -> Result) {
    self.future = future
    self.handler = handler
  }

  func attempt() -> ClaimedWait?? {
    guard future.isSettled else { return nil }
    immediate = true
    return .some(nil)
  }

  func register(coroutine: Coroutine, generation: UInt64) {
    future.whenSettled { [weak self, weak coroutine] _ in
      // Once the select has returned, its case is gone, and the coroutine's wait with it.
      guard let self, let coroutine, coroutine.claim(generation) else { return }
      self.won.store(true, ordering: .releasing)
      coroutine.wake()
    }
  }

  var hasWon: Bool { won.load(ordering: .acquiring) }

  func unregister() {}

  func complete() throws -> Result {
    // Reading the outcome counts as observing the future, as awaiting it would.
    guard let outcome = future.result else { throw CancellationError() }
    return try handler(outcome.get())
  }
}
