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
/// (and the coroutine may resume on another thread), so a coroutine has its own, made the first
/// time it notifies a callback, and a plain thread has its own. Left work belongs to the
/// stack that left it, so it is never run by some other code that happens to share the thread.
@usableFromInline
final class Trampoline {
  /// True while a notification on this stack is running callbacks.
  @usableFromInline private(set) var isActive = false
  /// Left work in arrival order; `head` is the next to run. Its capacity is kept between uses.
  private var queue: [Entry] = []
  private var head = 0

  private struct Entry {
    let target: any TrampolineTarget
    let kind: Int
  }

  /// The trampoline of the stack this code runs on: the running coroutine's, else the thread's.
  @usableFromInline
  static var current: Trampoline {
    if let coroutine = Coroutine.currentUnretained {
      return coroutine._withUnsafeGuaranteedRef { $0.trampoline }
    }
    return forThisThread
  }

  /// Leaves `target` to be run with `kind` once the callback running now has returned. Only
  /// while active.
  @usableFromInline
  func leave(_ target: any TrampolineTarget, kind: Int) {
    queue.append(Entry(target: target, kind: kind))
  }

  /// Runs `first` with the trampoline active, then everything left meanwhile, in order. Only
  /// while inactive; calls made from inside `first` leave their work instead.
  @usableFromInline
  func run(_ first: () -> Void) {
    isActive = true
    first()
    while head < queue.count {
      let entry = queue[head]
      head += 1
      entry.target.runLeftWork(entry.kind)
    }
    queue.removeAll(keepingCapacity: queue.capacity <= 1024)
    head = 0
    isActive = false
  }

  // MARK: The thread's own

  private static var forThisThread: Trampoline {
    if let raw = pthread_getspecific(key) {
      return Unmanaged<Trampoline>.fromOpaque(raw).takeUnretainedValue()
    }
    let made = Trampoline()
    pthread_setspecific(key, Unmanaged.passRetained(made).toOpaque())
    return made
  }

  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
      if let raw { Unmanaged<Trampoline>.fromOpaque(raw).release() }
    }
    coPrecondition(status == 0, "Trampoline: pthread_key_create failed (\(status))")
    return key
  }()
}

/// Something that leaves work on a ``Trampoline``: a future whose observers wait to be told,
/// or a future whose cancellation hooks wait to run. `kind` says which.
@usableFromInline
protocol TrampolineTarget: AnyObject {
  func runLeftWork(_ kind: Int)
}
