/// What a ``CoScope`` asks of the members it knows: how to end one, and whether it has ended
/// on its own, so that the scope can let it go.
///
/// Asked under the scope's lock: `hasEndedForScope` takes at most the member's own lock, and
/// nothing that holds a member's lock calls into a scope.
protocol ScopeMember: AnyObject {
  /// Ends the member: what cancelling its scope does to it.
  func endForScope()
  /// True once the member needs nothing more from its scope.
  var hasEndedForScope: Bool { get }
}

/// A future or task is cancelled with its scope, and leaves it once settled.
extension CoFuture: ScopeMember {
  func endForScope() { cancel() }
  var hasEndedForScope: Bool { isSettled }
}
