import Foundation
import Testing

/// Every ```swift block of the README and of Docs/Coroutines.docc compiles against this build's
/// `Coroutines` module, so a sample cannot rot unnoticed. (The mirrored sample tests, such as
/// `DocSamplesTests` and the `*ArticleTests`, run copies of the samples; this one compiles the
/// samples themselves.)
///
/// A block is a complete `main.swift` unless an HTML comment right before it says otherwise,
/// in which case the prose above the block says where it runs:
///
/// - `<!-- sample: fragment -->`: statements, such as the body of a coroutine, compiled inside
///   a throwing function that imports `Coroutines`, `Dispatch` and `Foundation`;
/// - `<!-- sample: async -->`: the same in an `async` function;
/// - `<!-- sample: declarations -->`: types, functions and extensions at file scope, in a file
///   of their own that imports only what the block imports;
/// - `<!-- sample: manifest -->`: a `Package.swift` excerpt; not compiled, but its install lines
///   must be the package's one install line (`installLinesAreTheSameEverywhere`).
///
/// The rest of such a comment, after its first line, is a harness: Swift that the block needs
/// but the page leaves out (a stand-in for the reader's own client, the value an earlier block
/// made). A fragment's harness is compiled around its function: types and functions at file
/// scope (`fileprivate`), values at the start of the function; a declarations block's, at file
/// scope before it. A `<!-- sample: harness … -->` comment anywhere on a page is a
/// harness for every fragment of the page (the stand-ins its samples share). DocC does not
/// render HTML comments.
///
/// All blocks compile in one `swiftc -typecheck` run (each in a file and a namespace of its own,
/// so a block's imports and names are its own); an error names the markdown file and line.
@Suite struct DocBlocksTests {
  @Test(.enabled(if: SwiftCompilerCheck.available != nil, SwiftCompilerCheck.missing))
  func everySwiftBlockOfTheReadmeAndTheArticlesCompiles() throws {
    let blocks = try DocBlocks.all()
    #expect(blocks.count > 50, "found only \(blocks.count) blocks under \(DocBlocks.root.path)")
    let failures = try DocBlocks.typecheck(blocks)
    #expect(failures.isEmpty, "\n\(failures.joined(separator: "\n"))")
  }

  /// A block with no comment before it is a whole program: it imports what it uses.
  @Test func aBlockWithoutAMarkerImportsWhatItUses() throws {
    for block in try DocBlocks.all() where block.kind == .main {
      #expect(
        block.code.contains { $0.hasPrefix("import Coroutines") },
        "\(block.location): a complete main.swift imports Coroutines; or mark it a fragment")
    }
  }

  /// Every install line of the README and of the articles is the same resolvable one.
  @Test func installLinesAreTheSameEverywhere() throws {
    let package =
      #".package(url: "https://github.com/swift-coroutines/swift-coroutines.git", from: "0.1.0")"#
    let product = #".product(name: "Coroutines", package: "swift-coroutines")"#
    var seen = 0
    for file in try DocBlocks.markdownFiles() {
      let text = try String(contentsOf: file, encoding: .utf8)
      for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false)
        .enumerated()
      {
        let place = "\(DocBlocks.relative(file)):\(index + 1)"
        if line.contains(".package(") {
          seen += 1
          #expect(line.contains(package), "\(place): \(line)")
        }
        if line.contains(".product(") {
          #expect(line.contains(product), "\(place): \(line)")
        }
      }
    }
    #expect(seen >= 2)
  }

  /// The generator finds a broken sample and names its file and line (so the test above can
  /// fail).
  @Test(.enabled(if: SwiftCompilerCheck.available != nil, SwiftCompilerCheck.missing))
  func aBrokenSampleFailsWithItsFileAndLine() throws {
    let markdown = """
      Some prose.

      ```swift
      import Coroutines

      let answer: Int = try CoroutineLoop.run { 42 }
      ```

      Inside a coroutine:

      <!-- sample: fragment
      let promise = CoPromise<Int>()
      -->
      ```swift
      let value: String = try co_await(promise)
      ```
      """
    let blocks = try DocBlocks.parse(markdown, file: "Broken.md")
    #expect(blocks.map(\.kind) == [.main, .fragment])
    let failures = try DocBlocks.typecheck(blocks)
    #expect(failures.count == 1, "\(failures)")
    #expect(failures.first?.hasPrefix("Broken.md:15:") == true, "\(failures)")
  }
}

/// One ```swift block of a markdown file.
struct DocBlock {
  enum Kind: String { case main, fragment, async, declarations, manifest, harness }

  let file: String
  /// The markdown line (from 1) of the block's first line of code.
  let line: Int
  let kind: Kind
  /// The harness, each line with its markdown line: the page's `harness` comments (for a
  /// fragment), then the block's own.
  var harness: [(line: Int, text: String)]
  let code: [String]

  var location: String { "\(file):\(line)" }
}

enum DocBlocks {
  /// The package's root: this file is Tests/CoroutinesTests/DocBlocksTests.swift.
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  static func relative(_ file: URL) -> String {
    String(file.path.dropFirst(root.path.count + 1))
  }

  /// README.md and every .md under Docs/Coroutines.docc, in a stable order.
  static func markdownFiles() throws -> [URL] {
    let catalog = root.appendingPathComponent("Docs/Coroutines.docc")
    var articles: [URL] = []
    let enumerator = FileManager.default.enumerator(at: catalog, includingPropertiesForKeys: nil)
    while let next = enumerator?.nextObject() as? URL {
      if next.pathExtension == "md" { articles.append(next) }
    }
    return [root.appendingPathComponent("README.md")]
      + articles.sorted { $0.path < $1.path }
  }

  static func all() throws -> [DocBlock] {
    try markdownFiles().flatMap { file in
      try parse(String(contentsOf: file, encoding: .utf8), file: relative(file))
    }
  }

  struct MarkupError: Error, CustomStringConvertible {
    let description: String
  }

  /// The ```swift blocks of `text`, each with the `<!-- sample: … -->` comment right before it.
  static func parse(_ text: String, file: String) throws -> [DocBlock] {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    var blocks: [DocBlock] = []
    var marker: (kind: DocBlock.Kind, harness: [(line: Int, text: String)], line: Int)?
    var pageHarness: [(line: Int, text: String)] = []
    var index = 0
    while index < lines.count {
      let trimmed = lines[index].trimmingCharacters(in: .whitespaces)
      if trimmed.hasPrefix("<!-- sample:") {
        let start = index
        let name = trimmed.dropFirst("<!-- sample:".count)
          .replacingOccurrences(of: "-->", with: "").split(separator: " ").first
        guard let name, let kind = DocBlock.Kind(rawValue: String(name)) else {
          throw MarkupError(description: "\(file):\(index + 1): unknown sample kind: \(trimmed)")
        }
        var harness: [(line: Int, text: String)] = []
        if !trimmed.hasSuffix("-->") {
          index += 1
          while index < lines.count, !lines[index].contains("-->") {
            harness.append((index + 1, lines[index]))
            index += 1
          }
        }
        if kind == .harness {
          pageHarness += harness
        } else {
          marker = (kind, harness, start + 1)
        }
      } else if trimmed.hasPrefix("```swift") {
        let indent = lines[index].prefix { $0 == " " }.count
        let first = index + 1
        index += 1
        var code: [String] = []
        while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces) != "```" {
          code.append(String(lines[index].dropFirst(min(indent, lines[index].count))))
          index += 1
        }
        blocks.append(
          DocBlock(
            file: file, line: first + 1, kind: marker?.kind ?? .main,
            harness: marker?.harness ?? [], code: code))
        marker = nil
      } else if !trimmed.isEmpty, let pending = marker {
        throw MarkupError(
          description: "\(file):\(pending.line): a sample comment not right before a ```swift block"
        )
      }
      index += 1
    }
    for index in blocks.indices where [.fragment, .async].contains(blocks[index].kind) {
      blocks[index].harness = pageHarness + blocks[index].harness
    }
    return blocks
  }

  /// A generated file, and for each of its lines (from 1) the markdown line it came from.
  struct Generated {
    let name: String
    var text = ""
    var origins: [Int] = []

    mutating func add(_ line: String, from origin: Int) {
      text += line + "\n"
      origins.append(origin)
    }
  }

  /// The `import` lines of a block, which go to the top of its file.
  static func isImport(_ line: String) -> Bool {
    let trimmed = line.trimmingCharacters(in: .whitespaces)
    return trimmed.hasPrefix("import ") || trimmed.hasPrefix("@testable import ")
  }

  static func generate(_ block: DocBlock, number: Int) -> Generated? {
    let stem =
      block.file.replacingOccurrences(of: ".md", with: "")
      .split(whereSeparator: { !$0.isLetter && !$0.isNumber }).last ?? "Doc"
    var file = Generated(name: "Block_\(stem)_\(number)_line\(block.line).swift")
    let numberedCode = block.code.enumerated().map { (block.line + $0.offset, $0.element) }
    let numberedHarness = block.harness.map { ($0.line, $0.text) }
    let imports = (numberedHarness + numberedCode).filter { isImport($0.1) }
    let code = numberedCode.filter { !isImport($0.1) }
    let harness = numberedHarness.filter { !isImport($0.1) }
    switch block.kind {
    case .manifest, .harness:
      return nil
    case .main:
      for (origin, line) in imports { file.add(line, from: origin) }
      file.add("enum Block_\(number) {", from: block.line)
      file.add("  @MainActor static func body() throws {", from: block.line)
      for (origin, line) in harness + code { file.add("    " + line, from: origin) }
      file.add("  }", from: block.line)
      file.add("}", from: block.line)
    case .fragment, .async:
      for module in ["Coroutines", "Dispatch", "Foundation"] {
        file.add("import \(module)", from: block.line)
      }
      for (origin, line) in imports { file.add(line, from: origin) }
      // The harness's types and functions at file scope, `fileprivate` (each block's own), so
      // that closures may capture them as `Sendable` does (a local function would have to be
      // marked `@Sendable`, and DocC reads a line starting with `@` as a directive); its
      // values, in the function.
      let (declarations, values) = splitHarness(harness)
      for (origin, line) in declarations { file.add(line, from: origin) }
      file.add("enum Block_\(number) {", from: block.line)
      let effects = block.kind == .async ? "async throws" : "throws"
      file.add("  static func body() \(effects) {", from: block.line)
      for (origin, line) in values + code { file.add("    " + line, from: origin) }
      file.add("  }", from: block.line)
      file.add("}", from: block.line)
    case .declarations:
      for (origin, line) in imports + harness + code { file.add(line, from: origin) }
    }
    return file
  }

  /// A fragment's harness in declarations, made `fileprivate` for file scope, and values (`let`
  /// and `var`), each with the lines that continue it (indented, or closing a brace).
  static func splitHarness(_ harness: [(Int, String)]) -> (
    declarations: [(Int, String)], values: [(Int, String)]
  ) {
    var declarations: [(Int, String)] = []
    var values: [(Int, String)] = []
    var inValue = false
    for (origin, line) in harness {
      let continues = line.first == " " || line.first == "}" || line.isEmpty
      if !continues { inValue = line.hasPrefix("let ") || line.hasPrefix("var ") }
      if inValue {
        values.append((origin, line))
      } else {
        declarations.append((origin, continues ? line : "fileprivate " + line))
      }
    }
    return (declarations, values)
  }

  /// Compiles `blocks` in one `swiftc -typecheck`; returns one line per error, starting with the
  /// markdown file and line.
  static func typecheck(_ blocks: [DocBlock]) throws -> [String] {
    let build = try #require(SwiftCompilerCheck.available)
    let folder = FileManager.default.temporaryDirectory
      .appendingPathComponent("doc-blocks-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    var generated: [String: (DocBlock, Generated)] = [:]
    for (number, block) in blocks.enumerated() {
      guard let file = generate(block, number: number) else { continue }
      try file.text.write(
        to: folder.appendingPathComponent(file.name), atomically: true, encoding: .utf8)
      generated[file.name] = (block, file)
    }
    if generated.isEmpty { return [] }
    let result = try SwiftCompilerCheck.run(
      mode: "-typecheck",
      files: generated.keys.sorted().map { folder.appendingPathComponent($0) },
      build: build)
    var failures: [String] = []
    for line in result.output.split(separator: "\n") where line.contains(": error: ") {
      let parts = line.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
      let name = parts.first.map { URL(fileURLWithPath: String($0)).lastPathComponent }
      guard parts.count == 4, let name, let (block, file) = generated[name],
        let generatedLine = Int(parts[1]), generatedLine - 1 < file.origins.count
      else {
        failures.append(String(line))
        continue
      }
      let origin = file.origins[generatedLine - 1]
      failures.append("\(block.file):\(origin):\(parts[3])")
    }
    if result.status != 0 && failures.isEmpty {
      failures.append("swiftc failed without an error line:\n\(result.output)")
    }
    return failures
  }
}
