import Synchronization

/// Something a ``CoScope`` can cancel: futures and tasks, and anything else with a `cancel()`
/// (a generator, a channel via a small extension, your own types).
public protocol CoCancellable: AnyObject {
  /// Stops the work; calling it again, or after the work ended, does nothing.
  func cancel()
}

extension CoFuture: CoCancellable {}

/// A lifetime for work: what is added to a scope is cancelled when the scope is cancelled, when
/// its deadline passes, or when the scope is released.
///
/// ```swift
/// final class FeedScreen {
///   private let scope = CoScope()
///   private(set) var refreshes = 0
///
///   func appear() {
///     scope.launch { [weak self] in
///       while true {
///         try co_delay(10)
///         self?.refreshes += 1
///       }
///     }
///   }
/// }
/// ```
///
/// Releasing the screen releases the scope, which cancels the refresh. A coroutine that held
/// its owner strongly while it waits would keep the owner, and so the scope, alive forever:
/// capture it weakly, and take a strong reference only between suspensions.
///
/// - Futures and tasks are held until they settle, then dropped; a task added to a scope keeps
///   running if nothing else holds it.
/// - Other cancellables are held weakly: one that is gone by then needs no cancelling.
/// - Anything added to a scope that is already cancelled is cancelled at once.
/// - Members are cancelled in the order they were added, on the thread that cancels the scope:
///   the caller of ``cancel()``, the thread that releases the scope, or the deadline's timer.
///   Add an object that is not thread-safe (an inline generator, say) only to a scope that is
///   cancelled on the thread that uses the object.
///
/// Coroutines launched with ``launch(on:name:stackSize:_:)`` belong to the scope rather than to
/// the coroutine that launched them: they outlive it, and its task does not wait for them.
public final class CoScope: @unchecked Sendable {  // all mutable state is behind `mutex`
  private enum Member {
    case future(CoCancellable)
    case object(WeakCancellable)
    case action(@Sendable () -> Void)

    func cancel() {
      switch self {
      case .future(let future): future.cancel()
      case .object(let reference): reference.object?.cancel()
      case .action(let action): action()
      }
    }
  }

  private let mutex = Mutex<Void>(())
  private var members: [Int: Member] = [:]
  private var nextKey = 0
  private var cancelled = false
  private var deadline: (any CoroutineTimer)?

  /// Creates an empty scope.
  public init() {}

  /// Creates a scope whose deadline passes `seconds` from now; see ``cancel(after:on:)``.
  public convenience init(timeout seconds: Double, on scheduler: (any CoroutineScheduler)? = nil) {
    coPrecondition(!seconds.isNaN, "CoScope(timeout:on:): the timeout is NaN")
    self.init()
    cancel(after: seconds, on: scheduler)
  }

  deinit {
    cancel()
  }

  /// True once the scope was cancelled (by ``cancel()`` or its deadline).
  public var isCancelled: Bool { mutex.withLock { _ in cancelled } }

  /// Members still held: pending futures and tasks, live objects and actions.
  public var count: Int { mutex.withLock { _ in members.count } }

  /// Adds a future or task: it is cancelled with the scope unless it settles first.
  @discardableResult
  public func add<T>(_ future: CoFuture<T>) -> CoFuture<T> {
    if let key = insert(.future(future)) {
      future.whenSettled { [weak self] _ in self?.remove(key) }
    }
    return future
  }

  /// Adds a task: it is cancelled with the scope unless it settles first.
  @discardableResult
  public func add<T>(_ task: CoTask<T>) -> CoTask<T> {
    add(task as CoFuture<T>)
    return task
  }

  /// Adds any cancellable object, held weakly.
  @discardableResult
  public func add<Item: CoCancellable>(_ item: Item) -> Item {
    insert(.object(WeakCancellable(item)))
    return item
  }

  /// Adds an action that runs when the scope is cancelled or released (at once if it already
  /// was): closing a channel, say. It runs on the thread that cancels the scope.
  public func onCancel(_ action: @escaping @Sendable () -> Void) {
    insert(.action(action))
  }

  /// Launches a coroutine on `scheduler` that belongs to this scope, not to the coroutine
  /// calling this; see ``co_launch(on:name:stackSize:stack:detached:_:)``. `body` is `@Sendable`,
  /// as there: it may run on another thread.
  ///
  /// - Parameters:
  ///   - scheduler: Where the coroutine runs and resumes.
  ///   - name: A name for diagnostics.
  ///   - stackSize: As for ``co_launch(on:name:stackSize:_:)``.
  ///   - body: The coroutine's code.
  /// - Returns: The task, which is also in the scope.
  @discardableResult
  public func launch<T>(
    on scheduler: (any CoroutineScheduler)?, name: String? = nil, stackSize: Int? = nil,
    _ body: @escaping @Sendable () throws -> T
  ) -> CoTask<T> {
    add(co_launch(on: scheduler, name: name, stackSize: stackSize, detached: true, body))
  }

  /// Launches a coroutine on the default scheduler (as ``co_launch(name:stackSize:_:)`` chooses
  /// it) that belongs to this scope, not to the coroutine calling this.
  ///
  /// - Parameters:
  ///   - name: A name for diagnostics.
  ///   - stackSize: As for ``co_launch(on:name:stackSize:_:)``.
  ///   - body: The coroutine's code.
  /// - Returns: The task, which is also in the scope.
  @discardableResult
  public func launch<T>(
    name: String? = nil, stackSize: Int? = nil, _ body: @escaping () throws -> T
  ) -> CoTask<T> {
    add(co_launch(name: name, stackSize: stackSize, detached: true, body))
  }

  /// Gives the scope a deadline: `seconds` from now it is cancelled, with everything in it. The
  /// timer runs on `scheduler`, else on the current coroutine's scheduler, else the loop this
  /// thread runs, else a global Dispatch queue (as for ``CoFuture/timeout(_:on:)``), so a
  /// virtual-time test loop drives it. A new deadline replaces the previous one.
  ///
  /// A pending deadline keeps a ``CoroutineLoop`` running: cancel or release the scope when its
  /// work is done.
  public func cancel(after seconds: Double, on scheduler: (any CoroutineScheduler)? = nil) {
    coPrecondition(!seconds.isNaN, "CoScope.cancel(after:on:): the deadline is NaN")
    let timer = timerScheduler(scheduler).schedule(after: seconds) { [weak self] in
      self?.cancel()
    }
    let replaced = mutex.withLock { _ -> (any CoroutineTimer)? in
      if cancelled { return timer }
      defer { deadline = timer }
      return deadline
    }
    replaced?.cancel()
  }

  /// Cancels everything in the scope, and everything added later. Calling it again does
  /// nothing.
  public func cancel() {
    let (toCancel, timer) = mutex.withLock { _ -> ([Member], (any CoroutineTimer)?) in
      if cancelled { return ([], nil) }
      cancelled = true
      defer {
        members = [:]
        deadline = nil
      }
      return (members.sorted { $0.key < $1.key }.map(\.value), deadline)
    }
    timer?.cancel()
    toCancel.forEach { $0.cancel() }
  }

  /// Stores `member` and returns its key, or cancels it at once if the scope is cancelled.
  @discardableResult
  private func insert(_ member: Member) -> Int? {
    let key = mutex.withLock { _ -> Int? in
      if cancelled { return nil }
      nextKey += 1
      members[nextKey] = member
      return nextKey
    }
    if key == nil { member.cancel() }
    return key
  }

  private func remove(_ key: Int) {
    _ = mutex.withLock { _ in members.removeValue(forKey: key) }
  }
}

private final class WeakCancellable {
  weak var object: (any CoCancellable)?
  init(_ object: any CoCancellable) { self.object = object }
}

extension CoFuture {
  /// Adds this future (or task) to `scope` and returns it, for chaining:
  /// `co_launch { … }.added(to: scope)`.
  @discardableResult
  public func added(to scope: CoScope) -> Self {
    scope.add(self)
    return self
  }
}
