import Foundation

/// Counts the lines of code of a region of a source file, to compare two implementations of
/// the same thing.
///
/// A region runs from a line containing `// region: NAME` to the next `// endregion`. Blank
/// lines and lines that are only a comment are not counted.
public enum SourceLines {
  /// The number of code lines in region `name` of the file at `path`, or nil when the file or
  /// the region cannot be found (a binary run away from its sources).
  public static func count(region name: String, inFile path: String) -> Int? {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    return count(region: name, in: text)
  }

  /// The number of code lines in region `name` of `text`, or nil when there is no such region.
  public static func count(region name: String, in text: String) -> Int? {
    var inside = false
    var found = false
    var count = 0
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if trimmed == "// region: \(name)" {
        inside = true
        found = true
        continue
      }
      if inside && trimmed == "// endregion" { inside = false }
      if inside && !trimmed.isEmpty && !trimmed.hasPrefix("//") { count += 1 }
    }
    return found ? count : nil
  }

  /// The lines of region `name` of the file at `path`, markers left out, or nil when the file or
  /// the region cannot be found.
  public static func text(region name: String, inFile path: String) -> String? {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    var inside = false
    var lines: [Substring] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if trimmed == "// region: \(name)" {
        inside = true
      } else if inside && trimmed == "// endregion" {
        return lines.joined(separator: "\n")
      } else if inside {
        lines.append(line)
      }
    }
    return nil
  }
}
