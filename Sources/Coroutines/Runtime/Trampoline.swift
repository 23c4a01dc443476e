import CLinux
import CUContext
import Glibc

/// Work that a callback started and that runs after the callback returns, instead of inside it.
///
/// Settling a future calls its observers, whose callbacks settle the next futures, whose
/// observers settle the next ones: run as calls, a chain of a thousand `map`s took a thousand
/// frames and overflowed a coroutine's stack. Instead, the first notification on a stack runs
/// its callbacks with the stack's trampoline *active*; a settle, a cancellation or an
/// observation that would call further callbacks from inside one of them leaves its target here
/// and returns, and the first notification runs what was left, in the order it was left, before
/// it returns. The stack stays a few frames deep however long the chain is.
///
/// One trampoline per stack, not per thread: a callback may suspend the coroutine it runs on
/// (and the coroutine may resume on another thread), so work left on a coroutine's stack
/// belongs to that coroutine, never to other code that happens to share the thread. A plain
/// thread keeps one for its own stack. A coroutine holds one only while it runs callbacks: it
/// borrows the thread's spare (made once per thread) and gives it back to the thread it ends
/// on, so notifying costs no allocation.
@usableFromInline
final class Trampoline {
  /// True while callbacks run on the stack that holds this trampoline.
  private var isActive = false
  /// Left work in arrival order; `head` is the next to run. Its capacity is kept between uses.
  private var queue: [any TrampolineTarget] = []
  private var head = 0
  /// For a thread's own stack: the loops this thread was running when the callbacks started. A
  /// loop run from inside a callback (`CoroutineLoop.run`, a test loop's `advance`) runs jobs
  /// that are not part of that callback: their callbacks get a trampoline of their own rather
  /// than wait for the callback, which may be waiting for them.
  private var loops: (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) = (nil, nil)

  /// The trampoline of the callbacks running on this stack, if callbacks are running on it.
  @usableFromInline
  static var running: Trampoline? {
    if let coroutine = Coroutine.currentUnretained {
      return coroutine._withUnsafeGuaranteedRef { $0.trampoline }
    }
    let own = threadStack
    guard own.isActive, own.loops == currentLoops() else { return nil }
    return own
  }

  /// Runs `first` on a trampoline of this stack, then everything left meanwhile, in order.
  /// Only where no callbacks are running (``running`` is nil); calls made from inside `first`
  /// leave their work instead of running it.
  @usableFromInline
  static func run(_ first: () -> Void) {
    guard let coroutine = Coroutine.currentUnretained else { return runOnThreadStack(first) }
    let trampoline = takeSpare()
    coroutine._withUnsafeGuaranteedRef { $0.trampoline = trampoline }
    trampoline.run(first)
    // The same coroutine (this is its stack), perhaps on another thread by now.
    coroutine._withUnsafeGuaranteedRef { $0.trampoline = nil }
    giveSpare(trampoline)
  }

  /// Leaves `target` to be run once the callback running now has returned.
  @usableFromInline
  func leave(_ target: any TrampolineTarget) {
    queue.append(target)
  }

  private func run(_ first: () -> Void) {
    isActive = true
    first()
    while head < queue.count {
      let target = queue[head]
      head += 1
      target.runLeftWork()
    }
    if head > 0 {
      queue.removeAll(keepingCapacity: queue.capacity <= 1024)
      head = 0
    }
    isActive = false
  }

  // MARK: The thread's

  private static func runOnThreadStack(_ first: () -> Void) {
    let own = threadStack
    guard own.isActive else {
      own.loops = currentLoops()
      return own.run(first)
    }
    // A loop runs inside a callback on this stack: its jobs get a trampoline of their own
    // until it returns.
    let nested = Trampoline()
    nested.loops = currentLoops()
    pthread_setspecific(threadStackKey, Unmanaged.passUnretained(nested).toOpaque())
    nested.run(first)
    pthread_setspecific(threadStackKey, Unmanaged.passUnretained(own).toOpaque())
  }

  private static func currentLoops() -> (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) {
    (cu_tls_current_loop(), cu_tls_current_test_loop())
  }

  /// The trampoline of this thread's own stack.
  private static var threadStack: Trampoline { threadLocal(threadStackKey) }

  /// This thread's spare, for a coroutine to hold while it runs callbacks (a new one if another
  /// coroutine holds it).
  private static func takeSpare() -> Trampoline {
    guard let raw = pthread_getspecific(spareKey) else { return Trampoline() }
    pthread_setspecific(spareKey, nil)
    return Unmanaged<Trampoline>.fromOpaque(raw).takeRetainedValue()
  }

  /// Keeps `trampoline` as this thread's spare, unless it has one.
  private static func giveSpare(_ trampoline: Trampoline) {
    guard pthread_getspecific(spareKey) == nil else { return }
    pthread_setspecific(spareKey, Unmanaged.passRetained(trampoline).toOpaque())
  }

  private static func threadLocal(_ key: pthread_key_t) -> Trampoline {
    if let raw = pthread_getspecific(key) {
      return Unmanaged<Trampoline>.fromOpaque(raw).takeUnretainedValue()
    }
    let made = Trampoline()
    pthread_setspecific(key, Unmanaged.passRetained(made).toOpaque())
    return made
  }

  private static let threadStackKey = makeKey()
  private static let spareKey = makeKey()

  private static func makeKey() -> pthread_key_t {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
      if let raw { Unmanaged<Trampoline>.fromOpaque(raw).release() }
    }
    coPrecondition(status == 0, "Trampoline: pthread_key_create failed (\(status))")
    return key
  }
}

/// Something that leaves work on a ``Trampoline``: a future whose observers wait to be told,
/// or the cancellation hooks of a future (see `LinkedFuture`).
@usableFromInline
protocol TrampolineTarget: AnyObject {
  /// Does the work left.
  func runLeftWork()
}

/// How the observers of a future that has just settled are told. Not generic, so that choosing
/// costs no look-up of generic metadata where futures run unspecialised.
// @unchecked: chosen inside a future's lock and acted on right after it, by the same code on
// the same stack; only the lock's `sending` result asks for it.
@usableFromInline
enum NotificationRoute: @unchecked Sendable {
  /// Only waiting coroutines (or nobody): told at once.
  case now
  /// Callbacks, from code that no callback on this stack is running: told at once, on a
  /// trampoline of this stack (``Trampoline/run(_:)``).
  case run
  /// Callbacks, from inside a callback on this stack: left on its trampoline.
  case left(Trampoline)
}
