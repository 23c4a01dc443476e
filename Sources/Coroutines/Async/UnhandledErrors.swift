import Glibc
import Synchronization

/// Where errors go that no one looked at, so none disappears silently.
///
/// An error of a coroutine counts as *unhandled* when its ``CoTask`` is released (its last
/// reference goes away) after being rejected, and nobody ever observed it: no `co_await`,
/// ``CoFuture/await()``, ``CoFuture/whenComplete(_:)``, ``CoFuture/result`` read, operator,
/// combinator or `value` from Swift Concurrency. Adding a task to a ``CoScope`` or being its
/// parent does not count as observing it. Cancellation (`CancellationError`,
/// ``CoroutineError/cancelledBeforeStart``) is never reported: someone asked for it.
///
/// A task is released once its coroutine has finished and no one holds it, so a discarded
/// `co_launch { ... }` that throws is reported right after it finishes; a task kept in a
/// property is reported only when that property lets it go.
///
/// The handler is chosen when the coroutine is launched: the launching coroutine's handler, else
/// the one installed on the launching thread by ``withHandler(_:_:)``, else the process-wide
/// ``handler``. So a test can catch the errors of just its own coroutines while other tests run
/// in parallel:
///
/// ```swift
/// let reported = CoPromise<String>()
/// try CoUnhandledErrors.withHandler({ _, error in reported.fulfill("\(error)") }) {
///   try CoroutineLoop.run { _ = co_launch(name: "worker") { throw Failure.disk } }
/// }
/// ```
public enum CoUnhandledErrors {
  /// Receives the coroutine's name (if it has one) and the error. It runs on the thread that
  /// released the task, inside that release: keep it short and never block.
  public typealias Handler = @Sendable (_ coroutineName: String?, _ error: any Error) -> Void

  /// The default: one line on standard error with the coroutine's name and the error.
  public static let standardError: Handler = { name, error in
    let line = message(coroutineName: name, error: error) + "\n"
    // One write(2) per line, so lines from several threads never interleave.
    _ = line.utf8CString.withUnsafeBufferPointer {
      write(STDERR_FILENO, $0.baseAddress, $0.count - 1)
    }
  }

  /// The line ``standardError`` writes, without its newline.
  static func message(coroutineName name: String?, error: any Error) -> String {
    let label = name.map { "'\($0)'" } ?? "(unnamed)"
    return "swift-coroutines: unhandled error in coroutine \(label): \(error)"
  }

  private static let global = Mutex<Handler>(standardError)

  /// The process-wide handler, for coroutines launched where no other was installed. Starts
  /// as ``standardError``.
  public static var handler: Handler {
    get { global.withLock { $0 } }
    set { global.withLock { $0 = newValue } }
  }

  /// Runs `body` with `handler` installed on this thread: coroutines launched by `body` on this
  /// thread, and every coroutine they launch in turn, report to `handler`.
  ///
  /// Call it outside coroutines (around ``CoroutineLoop/run(stackSize:_:)``, say). Inside a coroutine,
  /// what it launches inherits that coroutine's handler and ignores this one, since other
  /// coroutines run on the same thread whenever this one suspends.
  @discardableResult
  public static func withHandler<R>(_ handler: @escaping Handler, _ body: () throws -> R)
    rethrows -> R
  {
    let previous = scoped
    scoped = handler
    defer { scoped = previous }
    return try body()
  }

  /// The handler a coroutine launched now inherits: its launcher's, if a task launches it,
  /// else the one installed on this thread, if any.
  ///
  /// Passed along in its box: a closure read through a protocol requirement comes back wrapped
  /// in a reabstraction thunk, and a chain of launches would nest one thunk per generation.
  @usableFromInline
  static func inherited(from launcher: (any TaskNode)?) -> HandlerBox? {
    launcher.map { $0.unhandledErrorHandler } ?? scopedBox
  }

  static func report(name: String?, error: any Error, to box: HandlerBox?) {
    (box?.handler ?? self.handler)(name, error)
  }

  /// The handler installed on this thread by `withHandler`.
  private static var scopedBox: HandlerBox? {
    guard let raw = pthread_getspecific(key) else { return nil }
    return Unmanaged<HandlerBox>.fromOpaque(raw).takeUnretainedValue()
  }

  private static var scoped: Handler? {
    get { scopedBox?.handler }
    set {
      if let raw = pthread_getspecific(key) { Unmanaged<HandlerBox>.fromOpaque(raw).release() }
      let box = newValue.map { Unmanaged.passRetained(HandlerBox($0)).toOpaque() }
      pthread_setspecific(key, box)
    }
  }

  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
      if let raw { Unmanaged<HandlerBox>.fromOpaque(raw).release() }
    }
    coPrecondition(status == 0, "CoUnhandledErrors: pthread_key_create failed (\(status))")
    return key
  }()
}
