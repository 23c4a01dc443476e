/// A task as its parent and children see it, whatever its value type. A coroutine holds its task
/// (`Coroutine.attachment`, typed so that no launch searches the conformance tables) and tells
/// it when it could not start; `CoTask` in the async layer is the one conformer.
@usableFromInline
protocol TaskNode: AnyObject, Sendable {
  /// Cancels the task's coroutine and its children.
  func cancel()
  /// Records `child`; false if this task's children were already cancelled (the caller then
  /// cancels the child).
  func adopt(_ child: any TaskNode) -> Bool
  /// Tells the task that a child has settled. If that completes the task, returns its parent,
  /// which the caller tells next (see `CoTask.leaveParent()`).
  func childFinished(_ child: any TaskNode) -> (any TaskNode)?
  /// Cancels the task's own coroutine and returns the children still to cancel (see
  /// `cancelTree(from:)`).
  func cancelOwnCoroutine() -> [any TaskNode]
  /// Publishes why the task's coroutine could not start (see `Coroutine.launchAttached()`).
  func failedToStart(_ error: CoroutineError)
  /// Takes `child` out of the list of children, if it is in it.
  func removeChild(_ child: any TaskNode)
  /// The task's place in its parent's list of children, touched only under the parent's lock.
  var indexInParent: Int { get set }
  /// The unhandled-error handler that children inherit.
  var unhandledErrorHandler: HandlerBox? { get }
  /// Reports `error` through the task's unhandled-error handler (see `CoUnhandledErrors`), with
  /// the task's name: for a wait of its coroutine that the runtime ended because what it waited
  /// on was released (see ``CoroutineWaitAbandoned``).
  func reportUnhandled(_ error: any Error)
}

/// An unhandled-error handler (`CoUnhandledErrors.Handler`) in a class, so it is passed by
/// reference and never re-wrapped.
@usableFromInline
final class HandlerBox: Sendable {
  let handler: @Sendable (_ coroutineName: String?, _ error: any Error) -> Void
  init(_ handler: @escaping @Sendable (_ coroutineName: String?, _ error: any Error) -> Void) {
    self.handler = handler
  }
}

extension TaskNode {
  /// A node that keeps no handler reports nothing.
  func reportUnhandled(_ error: any Error) {}
}
