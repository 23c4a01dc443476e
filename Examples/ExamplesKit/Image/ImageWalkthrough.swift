/// Placeholder.
public enum ImageWalkthrough {
  /// Placeholder.
  public static let walkthrough = Walkthrough(name: "ImageWalkthrough", summary: "todo") { _ in }
}
