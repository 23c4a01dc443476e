/// Placeholder.
public enum TupleWalkthrough {
  /// Placeholder.
  public static let walkthrough = Walkthrough(name: "TupleWalkthrough", summary: "todo") { _ in }
}
