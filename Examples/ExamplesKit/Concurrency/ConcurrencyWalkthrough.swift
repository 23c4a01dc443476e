/// Placeholder.
public enum ConcurrencyWalkthrough {
  /// Placeholder.
  public static let walkthrough = Walkthrough(name: "ConcurrencyWalkthrough", summary: "todo") {
    _ in
  }
}
