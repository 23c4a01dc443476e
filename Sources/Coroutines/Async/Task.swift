import Synchronization

/// A launched coroutine: a ``CoFuture`` of its result that can also be cancelled.
///
/// ## Parents and children
///
/// A coroutine launched while another coroutine is running (without `detached: true`, and not
/// through a ``CoScope``) is that coroutine's *child*:
///
/// - Cancelling the parent cancels its children, and their children; a child launched by a
///   parent already cancelled starts cancelled, so its body never runs.
/// - The parent's task settles only after every child's task has settled. When the parent's
///   body returns, its task waits for the children still running; when the body throws, the
///   children still running are cancelled first (nobody is left to use their results), then
///   awaited. Either way the parent's task settles with its body's outcome: a child's error
///   does not fail the parent unless the body awaited that child and let the error through.
/// - While it waits, the parent counts as a live coroutine of its loop, so
///   ``CoroutineLoop/run(_:)`` does not return before the children are done.
///
/// The task settles once the coroutine has finished and left its stack, and its children have
/// settled: with the body's value, or with the error it threw.
public final class CoTask<T>: CoFuture<T>, @unchecked Sendable {
  // @unchecked: the result is CoFuture's and the family state is behind `family`, each a mutex.
  /// The name given at launch, shown in diagnostics.
  public let name: String?
  let coroutine: Coroutine
  /// Where this task reports an error nobody observed; `nil`: ``CoUnhandledErrors/handler``.
  let unhandledErrorHandler: CoUnhandledErrors.Handler?

  private let family = Mutex<Void>(())
  private var parent: (any TaskNode)?
  private var children: [ObjectIdentifier: any TaskNode] = [:]
  private var childrenCancelled = false
  private var bodyDone = false
  private var waitingOutcome: Result<T, any Error>?

  /// A task for `coroutine`, not started yet: the child of the task running on this thread,
  /// unless `detached`.
  @usableFromInline  // called from the inlinable co_launch
  init(name: String?, coroutine: Coroutine, detached: Bool) {
    let launcher = Coroutine.current?.attachment as? any TaskNode
    self.name = name
    self.coroutine = coroutine
    self.parent = detached ? nil : launcher
    self.unhandledErrorHandler = CoUnhandledErrors.inherited(from: launcher)
    super.init()
    coroutine.attachment = self
  }

  deinit {
    guard case .failure(let error)? = peek, !wasObserved, !error.isCancellation else { return }
    CoUnhandledErrors.report(name: name, error: error, to: unhandledErrorHandler)
  }

  /// Cancels the coroutine and its children: each pending or next suspension throws
  /// `CancellationError`, so `defer` blocks run and the coroutines unwind; the task then settles
  /// with whatever the body ended with (usually that error). A task cancelled before its
  /// coroutine started never runs its body and is rejected with
  /// ``CoroutineError/cancelledBeforeStart``.
  public override func cancel() {
    coroutine.cancel()
    cancelChildren()
  }

  /// True once ``cancel()`` has been called (on this task or on an ancestor).
  public var isCancelled: Bool { coroutine.isCancelled }

  private func cancelChildren() {
    let toCancel = family.withLock { _ -> [any TaskNode] in
      childrenCancelled = true
      return Array(children.values)
    }
    toCancel.forEach { $0.cancel() }
  }

  /// Joins the parent (born cancelled if the parent already is) and schedules the coroutine.
  @usableFromInline
  func start() {
    let parent = family.withLock { _ in self.parent }
    if let parent, !parent.adopt(self) { coroutine.cancel() }
    coroutine.launch { error in self.finish(.failure(error)) }
  }

  /// Publishes the body's outcome (called once the coroutine is off its stack, or instead of
  /// running it): at once if no child is running, else when the last child settles.
  @usableFromInline
  func finish(_ outcome: Result<T, any Error>) {
    coroutine.attachment = nil
    if case .failure = outcome { cancelChildren() }
    let settleNow = family.withLock { _ -> Bool in
      bodyDone = true
      if children.isEmpty { return true }
      waitingOutcome = outcome
      return false
    }
    if settleNow {
      complete(outcome)
    } else {
      // Still live for its loop until the children are done (see the type's documentation).
      (coroutine.home as? any CoroutineAccounting)?.coroutineCreated()
    }
  }

  private func complete(_ outcome: Result<T, any Error>) {
    settle(outcome)
    let parent = family.withLock { _ -> (any TaskNode)? in
      defer { self.parent = nil }
      return self.parent
    }
    parent?.childFinished(ObjectIdentifier(self))
  }
}

/// A task as its parent and children see it, whatever its value type.
protocol TaskNode: AnyObject, Sendable {
  /// Cancels the task's coroutine and its children.
  func cancel()
  /// Records `child`; false if this task's children were already cancelled (the caller then
  /// cancels the child).
  func adopt(_ child: any TaskNode) -> Bool
  /// Tells the task that a child has settled.
  func childFinished(_ child: ObjectIdentifier)
  /// The unhandled-error handler that children inherit.
  var unhandledErrorHandler: CoUnhandledErrors.Handler? { get }
}

extension CoTask: TaskNode {
  func adopt(_ child: any TaskNode) -> Bool {
    family.withLock { _ -> Bool in
      if childrenCancelled { return false }
      children[ObjectIdentifier(child)] = child
      return true
    }
  }

  func childFinished(_ child: ObjectIdentifier) {
    let outcome = family.withLock { _ -> Result<T, any Error>? in
      children[child] = nil
      guard bodyDone, children.isEmpty, let outcome = waitingOutcome else { return nil }
      waitingOutcome = nil
      return outcome
    }
    guard let outcome else { return }
    complete(outcome)
    (coroutine.home as? any CoroutineAccounting)?.coroutineFinished()
  }
}

extension Error {
  /// True for errors that mean "asked to stop" rather than "went wrong".
  var isCancellation: Bool {
    self is CancellationError || (self as? CoroutineError) == .cancelledBeforeStart
  }
}
