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
///   ``CoroutineLoop/run(stackSize:_:)`` does not return before the children are done.
///
/// The task settles once the coroutine has finished and left its stack, and its children have
/// settled: with the body's value, or with the error it threw.
public final class CoTask<T>: CoFuture<T>, @unchecked Sendable {
  // @unchecked: the outcome and the family state are behind CoFuture's `futureLock`.
  /// The name given at launch, shown in diagnostics.
  public var name: String? { coroutine.name }  // kept once, in the coroutine
  @usableFromInline let coroutine: Coroutine
  /// Where this task reports an error nobody observed; `nil`: ``CoUnhandledErrors/handler``.
  @usableFromInline let unhandledErrorHandler: HandlerBox?
  /// The body, until the coroutine takes it to run it (or is cancelled before it starts). Kept
  /// here rather than captured by the coroutine's closure, which then captures nothing and
  /// costs no allocation; only the coroutine touches it, or `failedToStart` instead.
  // `Optional<…>` spelled out, here and for `parent`: a `T?` property starts as nil before
  // `init` assigns it, and that first assignment released the nil (a call per launch).
  @usableFromInline @exclusivity(unchecked) var body: Optional<() throws -> T>

  // `@usableFromInline` so that launching and finishing run specialised in the caller (see
  // CoFuture). `@exclusivity(unchecked)`: touched only inside `futureLock`, and no access calls
  // out. One lock for the outcome and the family: the end of the body checks for children and
  // publishes under one acquisition.
  /// The parent, kept alive by its children until they have all finished. Touched without the
  /// lock: only in `init`, `start` (before the coroutine is scheduled), `leaveParent` (once, after
  /// it finished) and `deinit`, which follow each other.
  @usableFromInline @exclusivity(unchecked) var parent: Optional<any TaskNode>
  /// The children still running (see `ChildList`): adopting and leaving cost O(1) with no
  /// hashing (a dictionary hashed and probed, and with a million children missed the cache on
  /// every probe). Unowned: a child leaves when it finishes, or in its `deinit` if its coroutine
  /// was dropped unfinished, so every task here is alive, and the entries cost no retain or
  /// release (links through the children themselves did, each read through `TaskNode`
  /// returning +1).
  @usableFromInline @exclusivity(unchecked) var children = ChildList()
  /// This task's place in its parent's `children`, -1 when in none; touched only under the
  /// parent's `futureLock`.
  @usableFromInline @exclusivity(unchecked) var indexInParent = -1
  @usableFromInline @exclusivity(unchecked) var childrenCancelled = false
  /// Set when the body finished with children still running: the last child to finish
  /// publishes the outcome, which waits in the future's storage meanwhile.
  @usableFromInline @exclusivity(unchecked) var waitsForChildren = false

  /// A task for `coroutine`, not started yet: the child of the task running on this thread,
  /// unless `detached`. `body` is consumed: moved into the task, not retained for it.
  @inlinable  // called from the inlinable co_launch
  init(coroutine: Coroutine, detached: Bool, body: consuming @escaping () throws -> T) {
    let launcher = currentTaskNode()
    // Asked before the coroutine is stored: a call after the store made the compiler retain and
    // release the coroutine around it.
    self.unhandledErrorHandler = CoUnhandledErrors.inherited(from: launcher)
    self.coroutine = coroutine
    self.body = body
    // Moved, not copied: a copy kept the launcher retained across the rest of the launch.
    if detached { self.parent = nil } else { self.parent = consume launcher }
    super.init()
    // The stored coroutine, not the parameter: using the parameter after moving it into the
    // field cost a retain and a release.
    attach(self, to: self.coroutine)
  }

  deinit {
    // A task still linked to its parent was dropped unfinished (its loop went away with the
    // coroutine still scheduled): it must leave the parent's list, which does not retain it.
    if let parent { parent.removeChild(self) }
    // No lock: nothing else can reach the task any more.
    if futureState == .rejected, !futureObserved { reportUnobservedFailure() }
    children.deallocate()
  }

  /// Reports the failure nobody observed. Out of line because the deinitialiser runs
  /// unspecialised: reading the outcome there looked up `Result<T, any Error>?`'s metadata for
  /// every task, failed or not (about 650 instructions per launch).
  @inline(never)
  private func reportUnobservedFailure() {
    guard case .failure(let error)? = peek, !error.isCancellation else { return }
    CoUnhandledErrors.report(name: name, error: error, to: unhandledErrorHandler)
  }

  /// Cancels the coroutine and its children: each pending or next suspension throws
  /// `CancellationError`, so `defer` blocks run and the coroutines unwind; the task then settles
  /// with whatever the body ended with (usually that error). A task cancelled before its
  /// coroutine started never runs its body and is rejected with
  /// ``CoroutineError/cancelledBeforeStart``.
  public override func cancel() {
    cancelTree(from: self)
  }

  /// True once ``cancel()`` has been called (on this task or on an ancestor).
  public var isCancelled: Bool { coroutine.isCancelled }

  @usableFromInline
  func cancelChildren() {
    cancelTrees(from: takeChildrenToCancel())
  }

  /// Marks the children cancelled (a child adopted from now on starts cancelled) and returns
  /// them, the first time; an empty array afterwards, as the first call cancels them all. So a
  /// tree is walked once however many of its tasks are cancelled, or end with an error (which
  /// cancels their children), one after another.
  @usableFromInline
  func takeChildrenToCancel() -> [any TaskNode] {
    // Strong references, taken under the lock while every child is still alive.
    futureLock.withLock { _ -> [any TaskNode] in
      if childrenCancelled { return [] }
      childrenCancelled = true
      return children.nodes
    }
  }

  /// Cancels this task's coroutine and returns the children still to cancel.
  @usableFromInline
  func cancelOwnCoroutine() -> [any TaskNode] {
    coroutine.cancel()
    return takeChildrenToCancel()
  }

  /// Joins the parent (born cancelled if the parent already is) and schedules the coroutine.
  @inlinable
  func start() {
    if let parent, !parent.adopt(self) { cancelBeforeStart(coroutine) }
    coroutine.launchAttached()
  }

  /// Runs the body on the coroutine's stack and keeps its outcome unpublished; returns what
  /// publishes it once the coroutine is off its stack. The closure captures the task alone,
  /// so it needs no allocation.
  @inlinable
  func runBody() -> () -> Void {
    // Moved out, not copied: a copy and a reset retained and released what the body captures.
    var taken: Optional<() throws -> T> = nil
    swap(&taken, &body)
    guard let body = taken else { coStop("a task's body ran twice") }
    storeOutcome(Result { try body() })
    // The attachment's reference to this task moves into the closure: nothing asks for the
    // attachment once the body has returned, and a new reference for the closure, besides
    // the attachment's, cost a retain and a release of the task per launch.
    var held: Optional<any TaskNode> = nil
    swap(&held, &coroutine.attachment)
    guard let held else { coStop("a task's coroutine lost its attachment") }
    let task = unsafeDowncast(held as AnyObject, to: CoTask<T>.self)
    return { task.finish() }
  }

  /// Publishes the body's outcome, stored by `runBody` (called once the coroutine is off its
  /// stack, or instead of running it): at once if no child is running, else when the last
  /// child settles.
  @inlinable
  func finish() {
    attach(nil, to: coroutine)
    // Still unpublished, so only this task's own code has touched it.
    if futureError != nil { cancelChildren() }
    var waits = false
    var route = NotificationRoute.now
    let toNotify = futureLock.withLock { _ -> Observers? in
      if children.isEmpty { return publishStoredOutcomeLocked(&route) }
      waitsForChildren = true
      waits = true
      return nil
    }
    if waits {
      // Still live for its loop until the children are done (see the type's documentation).
      coroutineStillLive(coroutine)
      return
    }
    if let toNotify { notifyPublished(toNotify, route) }
    leaveParent()
  }

  /// Tells the parent, if any, that this task has settled; and its parent, if that completes
  /// the parent, and so on up (``tellAncestors(_:that:)``): a loop, not calls from each parent
  /// to the next, so a chain of a million nested coroutines ending at once takes one frame.
  @inlinable
  func leaveParent() {
    guard let parent else { return }
    self.parent = nil
    // Usually the parent goes on running, or has other children: nothing more to do.
    guard let grandparent = parent.childFinished(self) else { return }
    tellAncestors(grandparent, that: parent)
  }

  /// Takes the parent, to be told that this task has settled.
  @usableFromInline
  func takeParent() -> (any TaskNode)? {
    defer { parent = nil }
    return parent
  }
}

/// Tells `ancestor` that `child` has settled, and so on up while that completes each one.
@usableFromInline
func tellAncestors(_ ancestor: any TaskNode, that child: any TaskNode) {
  var child = child
  var next: (any TaskNode)? = ancestor
  while let node = next {
    next = node.childFinished(child)
    child = node
  }
}

/// Cancels `root` and every task below it, one after another from a list rather than by
/// calls from each parent to its children: a chain a million deep is cancelled in one frame,
/// and each task once (see `CoTask.takeChildrenToCancel()`).
@usableFromInline
func cancelTree(from root: any TaskNode) {
  cancelTrees(from: root.cancelOwnCoroutine())
}

/// Cancels the tasks in `roots` and every task below them (see ``cancelTree(from:)``).
@usableFromInline
func cancelTrees(from roots: [any TaskNode]) {
  var toCancel = roots
  while let node = toCancel.popLast() {
    toCancel.append(contentsOf: node.cancelOwnCoroutine())
  }
}

/// The task of the coroutine running on this thread, if any: the parent of a task launched now.
@usableFromInline
func currentTaskNode() -> (any TaskNode)? {
  Coroutine.currentUnretained?._withUnsafeGuaranteedRef { $0.attachment }
}

/// Records `task` as `coroutine`'s (or clears it): how a coroutine launched on it finds its parent.
/// Inlinable, so that the caller sees the store: an opaque call made it retain and release the
/// task around it, beside the retain the store itself takes.
@inlinable
func attach(_ task: (any TaskNode)?, to coroutine: Coroutine) {
  coroutine.attachment = task
}

/// Cancels a coroutine whose parent was cancelled before it could start.
@usableFromInline
func cancelBeforeStart(_ coroutine: Coroutine) {
  coroutine.cancel()
}

/// Keeps a finished coroutine live for its loop while its children run (see ``CoTask``).
@usableFromInline
func coroutineStillLive(_ coroutine: Coroutine) {
  accounting(of: coroutine.home)?.coroutineCreated()
}

/// A child in its parent's list, not retained (see `CoTask.children`); nil for a child that left.
@usableFromInline
struct ChildLink {
  @usableFromInline unowned(unsafe) let node: (any TaskNode)?
  @inlinable init(node: (any TaskNode)?) { self.node = node }
  /// True for a child that left. Read as bits: the first word is the child's address, zero
  /// for nil, and reading `node` made a strong reference (a retain and a release).
  var isEmpty: Bool { withUnsafeBytes(of: self) { $0.load(as: UInt.self) == 0 } }
}

extension CoTask: TaskNode {
  @usableFromInline
  func adopt(_ child: any TaskNode) -> Bool {
    futureLock.withLock { _ -> Bool in
      if childrenCancelled { return false }
      children.append(child)
      return true
    }
  }

  /// The coroutine could not start (cancelled before, or no stack): it never runs, so the body
  /// and the outcome are this call's to touch. Unspecialised, like every `TaskNode` call.
  @usableFromInline
  func reportUnhandled(_ error: any Error) {
    CoUnhandledErrors.report(name: name, error: error, to: unhandledErrorHandler)
  }

  @usableFromInline
  func failedToStart(_ error: CoroutineError) {
    body = nil
    storeOutcome(.failure(error))
    finish()
  }

  @usableFromInline
  func removeChild(_ child: any TaskNode) {
    futureLock.withLock { _ in unlink(child) }
  }

  /// Inside `futureLock`.
  @usableFromInline
  func unlink(_ child: any TaskNode) {
    children.remove(child)
  }

  /// Unspecialised, like every `TaskNode` call (publishing looks up `T`'s metadata).
  @usableFromInline
  func childFinished(_ child: any TaskNode) -> (any TaskNode)? {
    let settleNow = futureLock.withLock { _ -> Bool in
      unlink(child)
      guard children.isEmpty, waitsForChildren else { return false }
      waitsForChildren = false
      return true
    }
    guard settleNow else { return nil }
    publishStoredOutcome()
    accounting(of: coroutine.home)?.coroutineFinished()
    return takeParent()
  }
}

extension Error {
  /// True for errors that mean "asked to stop" rather than "went wrong".
  var isCancellation: Bool {
    self is CancellationError || (self as? CoroutineError) == .cancelledBeforeStart
  }
}
