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
/// final class FeedScreen: Sendable {
///   private let scope = CoScope()
///   private let refreshCount = Mutex(0)
///
///   var refreshes: Int { refreshCount.withLock { $0 } }
///
///   func appear() {
///     scope.launch { [weak self] in
///       while true {
///         try co_delay(10)
///         self?.refreshCount.withLock { $0 += 1 }
///       }
///     }
///   }
/// }
/// ```
///
/// Releasing the screen releases the scope, which cancels the refresh. A coroutine that held
/// its owner strongly while it waits would keep the owner, and so the scope, alive forever:
/// capture it weakly, and take a strong reference only between suspensions. The screen is
/// `Sendable`, its count behind a `Mutex`, because the scope's coroutine may run on another
/// thread than `appear()`'s caller: ``launch(name:stackSize:_:)`` takes a `sending` body.
///
/// - Futures and tasks are held until they settle, then dropped; a task added to a scope keeps
///   running if nothing else holds it.
/// - Other cancellables are held weakly: one that is gone by then needs no cancelling. A
///   released object leaves the scope, and so do a closed channel, a stopped actor and a
///   finished generator, so a long-lived scope given many short-lived members stays small
///   (see ``count``).
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
    /// A future or task, held until it settles (it then removes itself).
    case future(any ScopeMember)
    /// A channel, actor or generator, held weakly.
    case member(WeakScopeMember)
    /// Any other cancellable object, held weakly.
    case object(WeakCancellable)
    case action(@Sendable () -> Void)

    func cancel() {
      switch self {
      case .future(let future): future.endForScope()
      case .member(let reference): reference.member?.endForScope()
      case .object(let reference): reference.object?.cancel()
      case .action(let action): action()
      }
    }

    /// True once the scope has nothing left to do with it: released, or ended on its own.
    var hasLeft: Bool {
      switch self {
      case .future(let future): return future.hasEndedForScope
      case .member(let reference): return reference.member?.hasEndedForScope ?? true
      case .object(let reference): return reference.object == nil
      case .action: return false
      }
    }
  }

  private let mutex = Mutex<Void>(())
  private var members: [Int: Member] = [:]
  private var nextKey = 0
  /// How many stored members make the next insert sweep out the ones that left: twice those
  /// that stayed at the last sweep, so sweeping costs O(1) per insert, amortised, and the
  /// storage never holds more than about twice the live members.
  private var sweepAt = CoScope.minimumSweep
  private static let minimumSweep = 32
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

  /// How many members the scope would cancel now: pending futures and tasks, objects still
  /// alive, channels still open, actors not stopped, generators not finished, and actions.
  /// A member that settles, finishes or is released leaves the scope on its own.
  public var count: Int {
    mutex.withLock { _ in
      sweepLocked()
      return members.count
    }
  }

  /// Entries in the scope's storage, including members that left since the last sweep.
  var storedCount: Int { mutex.withLock { _ in members.count } }

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

  /// Adds any cancellable object, held weakly: it leaves the scope once released (a
  /// generator also once it has finished).
  @discardableResult
  public func add<Item: CoCancellable>(_ item: Item) -> Item {
    if let member = item as? any ScopeMember {
      insert(.member(WeakScopeMember(member)))
    } else {
      insert(.object(WeakCancellable(item)))
    }
    return item
  }

  /// Adds a channel, actor or generator, held weakly.
  func insertWeakly(_ member: any ScopeMember) {
    insert(.member(WeakScopeMember(member)))
  }

  /// Adds an action that runs when the scope is cancelled or released (at once if it already
  /// was). It runs on the thread that cancels the scope, and counts as a member until then.
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
  /// it) that belongs to this scope, not to the coroutine calling this. `body` is `sending`, as
  /// there: the default scheduler may run it on another thread at the same time as its launcher,
  /// so the launcher may not go on using what it captures.
  ///
  /// - Parameters:
  ///   - name: A name for diagnostics.
  ///   - stackSize: As for ``co_launch(on:name:stackSize:_:)``.
  ///   - body: The coroutine's code, handed over to the coroutine (`sending`).
  /// - Returns: The task, which is also in the scope.
  @discardableResult
  public func launch<T>(
    name: String? = nil, stackSize: Int? = nil, _ body: sending @escaping () throws -> T
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
      if members.count >= sweepAt { sweepLocked() }
      return nextKey
    }
    if key == nil { member.cancel() }
    return key
  }

  /// Drops the members that left (inside `mutex`). A new dictionary rather than removals in
  /// place, so that its storage shrinks with it.
  private func sweepLocked() {
    members = members.filter { !$0.value.hasLeft }
    sweepAt = max(CoScope.minimumSweep, members.count * 2)
  }

  private func remove(_ key: Int) {
    _ = mutex.withLock { _ in members.removeValue(forKey: key) }
  }
}

private final class WeakCancellable {
  weak var object: (any CoCancellable)?
  init(_ object: any CoCancellable) { self.object = object }
}

private final class WeakScopeMember {
  weak var member: (any ScopeMember)?
  init(_ member: any ScopeMember) { self.member = member }
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
