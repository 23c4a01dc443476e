/// A launched coroutine: a ``CoFuture`` of its result that can also be cancelled.
///
/// The task settles once the coroutine has finished and left its stack: with the body's value,
/// or with the error it threw.
public final class CoTask<T>: CoFuture<T>, @unchecked Sendable {
  // @unchecked: the state is CoFuture's (behind its mutex); `coroutine` is immutable.
  /// The name given at launch, shown in diagnostics.
  public let name: String?
  let coroutine: Coroutine

  @usableFromInline  // called from the inlinable co_launch
  init(name: String?, coroutine: Coroutine) {
    self.name = name
    self.coroutine = coroutine
    super.init()
  }

  /// Cancels the coroutine: its pending or next suspension throws `CancellationError`, so its
  /// `defer` blocks run and it unwinds; the task then settles with whatever the body ended with
  /// (usually that error). A task cancelled before its coroutine started never runs its body
  /// and is rejected with ``CoroutineError/cancelledBeforeStart``.
  public override func cancel() {
    coroutine.cancel()
  }

  /// True once ``cancel()`` has been called.
  public var isCancelled: Bool { coroutine.isCancelled }
}
