/// `await(_:_:)` in a select: a case won by a future's settling rather than by a channel.
///
/// It has a lock of its own, so that the select takes it with the channels' locks; nobody
/// else takes it. Its waiter is a ``CoroutineResumer`` on the future, as for `co_await`: it
/// claims the selecting coroutine's wait like a channel operation would (doing nothing once
/// another case won it), and is told at once when the future settles, never left for a
/// callback running on the selecting coroutine to finish.
final class SelectFuture<T, Result>: SelectCase {
  let lock = ShortLock()
  private let future: CoFuture<T>
  private let handler: (T) throws -> Result
  /// Where the resumer writes the outcome when it wins; read by the selecting coroutine after
  /// it woke. On the heap: the select's frame may be on a shared stack.
  private let slot = UnsafeMutablePointer<Swift.Result<T, any Error>?>.allocate(capacity: 1)

  init(future: CoFuture<T>, handler: @escaping (T) throws -> Result) {
    self.future = future
    self.handler = handler
    slot.initialize(to: nil)
  }

  deinit {
    // The resumer writes only after winning the select's wait, which ended before now.
    slot.deinitialize(count: 1).deallocate()
  }

  func attempt() -> ClaimedWait?? {
    future.isSettled ? .some(nil) : nil
  }

  func register(coroutine: Coroutine, generation: UInt64) {
    let resumer = CoroutineResumer(coroutine: coroutine, generation: generation, slot: slot)
    // Not counted as observing: only the case that wins reads the outcome.
    future.observe(.resumer(resumer), marking: false)
  }

  var hasWon: Bool { slot.pointee != nil }

  func unregister() {}

  func complete() throws -> Result {
    // Reading the outcome counts as observing the future, as awaiting it would.
    guard let outcome = future.result else { throw CancellationError() }
    return try handler(outcome.get())
  }
}
