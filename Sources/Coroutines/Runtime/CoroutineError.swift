import Glibc

/// Errors the coroutine runtime throws. Cancellation uses Swift's own `CancellationError`.
public enum CoroutineError: Error, Equatable, CustomStringConvertible {
  /// A call that suspends (`co_await(_:)`, ``co_delay(_:)``, …) was made outside a
  /// coroutine.
  case notInCoroutine
  /// A channel was closed: sending is refused, and receiving once it is drained.
  case channelClosed
  /// An actor was stopped before it answered the message.
  case actorStopped
  /// A timeout passed before the awaited value arrived.
  case timedOut
  /// A value was refused by `CoFuture.validate(on:_:)`: its predicate returned false.
  case validationFailed
  /// The task was cancelled before its coroutine ever ran, so its body never started.
  case cancelledBeforeStart
  /// A generator's `yield` was called outside that generator's body: from another coroutine,
  /// after the body ended, or (for an inline generator) inside `co_await(on:)`, away from the
  /// consumer it hands values to.
  case yieldOutsideGenerator
  /// The kernel refused to map a coroutine stack of `size` bytes (`errno` says why).
  ///
  /// Either the process is out of memory, or, on Linux before 6.13, it reached the mapping
  /// limit: there each guarded stack costs two memory mappings, and the default
  /// `vm.max_map_count` of 65 530 stops dedicated stacks near 32 700 live coroutines. From 6.13
  /// on, 64 stacks share one mapping, so memory is the limit.
  case stackAllocationFailed(size: Int, errno: Int32)
  /// A coroutine on a shared stack tried to move to another scheduler (`co_await(on:)`): its
  /// stack belongs to its loop, whose thread may run another coroutine there meanwhile.
  case sharedStackCannotMove
  /// `CoCondition.wait(_:timeout:)` was called by a coroutine that does not hold the mutex it
  /// was given.
  case mutexNotHeld
  /// A coroutine was launched on a ``CoroutineLoopGroup`` from outside it after
  /// ``CoroutineLoopGroup/shutdown()``: its body never ran.
  case schedulerShutDown
  /// A callback of the `(value?, error?)` shape awaited with `co_await(_:)` was called with
  /// neither a value nor an error.
  case neitherValueNorError

  /// A sentence that names the problem and, where there is one, the limit behind it.
  public var description: String {
    switch self {
    case .notInCoroutine: "this call suspends a coroutine, and was made outside any coroutine"
    case .channelClosed: "the channel is closed"
    case .actorStopped: "the actor was stopped before it answered"
    case .timedOut: "the operation timed out"
    case .validationFailed: "the value was refused by validate(_:)"
    case .cancelledBeforeStart: "the task was cancelled before its coroutine started"
    case .yieldOutsideGenerator:
      "yield was called outside its generator's body (from another coroutine, after the body "
        + "ended, or inside co_await(on:) in an inline generator)"
    case .stackAllocationFailed(let size, let code):
      "could not map a \(size)-byte coroutine stack (\(String(cString: strerror(code)))): "
        + "out of memory, or, on Linux before 6.13 (two mappings per stack), past "
        + "vm.max_map_count, whose default allows about 32 700 live coroutines with dedicated "
        + "stacks; raise it, or launch with stack: .shared"
    case .sharedStackCannotMove:
      "a coroutine on a shared stack cannot move to another scheduler: launch it with "
        + "stack: .dedicated to use co_await(on:)"
    case .mutexNotHeld:
      "CoCondition.wait(_:timeout:): the calling coroutine does not hold the mutex it passed"
    case .schedulerShutDown:
      "the coroutine was launched on a CoroutineLoopGroup after its shutdown(), so it never ran"
    case .neitherValueNorError:
      "the awaited callback was called with neither a value nor an error"
    }
  }
}
