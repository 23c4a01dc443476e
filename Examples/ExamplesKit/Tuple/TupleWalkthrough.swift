import Coroutines
import Dispatch
import Foundation

/// The file a promise resolves to: its path, its contents, and why it could not be read.
public typealias FileContent = (path: String, data: Data?, error: (any Error)?)

/// Reads the file at `path` on `queue` and resolves the promise with a tuple, as Objective-C
/// code did with coobjc's `co_tuple`: the promise is always fulfilled, and the tuple says
/// whether reading worked.
public func loadContentFromFile(
  _ path: String, on queue: DispatchQueue = .global(qos: .utility), narrator: Narrator? = nil
) -> CoPromise<FileContent> {
  let promise = CoPromise<FileContent>()
  queue.async {
    narrator?.say("reading \((path as NSString).lastPathComponent)")
    do {
      promise.fulfill((path, try Data(contentsOf: URL(fileURLWithPath: path)), nil))
    } catch {
      promise.fulfill((path, nil, error))
    }
  }
  return promise
}

/// Awaits a promise of a tuple and takes it apart in one `let`.
public enum TupleWalkthrough {
  /// What each file gave.
  public struct Loaded: Sendable, Equatable {
    /// The path the tuple named.
    public let path: String
    /// The contents, when reading worked.
    public let text: String?
    /// The error's description, when it did not.
    public let error: String?
  }

  /// The entry for `swift run examples tuple`.
  public static let walkthrough = Walkthrough(
    name: "tuple",
    summary: "loadContentFromFile: a promise of (path, data, error), destructured after co_await"
  ) { narrator in
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("coroutines-tuple-\(getpid())")
    let results = try run(in: directory, narrator: narrator)
    guard results.count == 2, results[0].text != nil, results[1].error != nil else {
      throw WalkthroughCheckFailed("expected one file read and one error, got \(results)")
    }
    narrator.show(
      "\n  No nested callbacks and no special type for several values: the promise carries a"
        + "\n  tuple, and `let (path, data, error) = try co_await(...)` takes it apart.")
  }

  /// Writes a file into `directory`, loads it and a missing one, and removes the directory.
  public static func run(in directory: URL, narrator: Narrator) throws -> [Loaded] {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let existing = directory.appendingPathComponent("greeting.txt").path
    let missing = directory.appendingPathComponent("missing.txt").path
    try Data("hello from a coroutine\n".utf8).write(to: URL(fileURLWithPath: existing))

    return try CoroutineLoop.run {
      var loaded: [Loaded] = []
      for file in [existing, missing] {
        narrator.say("co_await(loadContentFromFile(\"\((file as NSString).lastPathComponent)\"))")
        let (path, data, error) = try co_await(loadContentFromFile(file, narrator: narrator))
        let name = (path as NSString).lastPathComponent
        if let data {
          let text = String(decoding: data, as: UTF8.self)
          narrator.say(
            "path: \(name), data: \(data.count) bytes \(text.debugDescription), error: nil")
          loaded.append(Loaded(path: path, text: text, error: nil))
        } else {
          let reason = error?.localizedDescription ?? "unknown"
          narrator.say("path: \(name), data: nil, error: \(shortened(reason))")
          loaded.append(Loaded(path: path, text: nil, error: reason))
        }
      }
      return loaded
    }
  }

  private static func shortened(_ text: String) -> String {
    text.count > 90 ? String(text.prefix(87)) + "..." : text
  }
}
