import Foundation
import Testing

@testable import Coroutines

/// A body launched without a scheduler may run on another thread at the same time as its
/// launcher (a group moves coroutines between its loops), and an inline generator's body runs
/// on whichever thread asks for its values, so these bodies are `sending`: the compiler rejects
/// one that shares a `var` or a non-Sendable object with the code that wrote it, and accepts
/// children that hand their results back.
@Suite struct SendableBodiesTests {
  /// The correct form of the racy program below, run (the sample of `co_launch`'s doc comment):
  /// four children on a group of two threads each count to 100 000 in a variable of their own,
  /// and the parent sums their results.
  @Test func childrenThatReturnTheirCountsSumExactly() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let parent = co_launch(on: group) { () -> Int in
      let children = (0..<4).map { _ in
        co_launch { () -> Int in
          var count = 0  // each child counts in a variable of its own
          for _ in 0..<100_000 { count += 1 }
          return count
        }
      }
      return try children.reduce(0) { try $0 + co_await($1) }  // 400 000
    }
    #expect(try CoroutineLoop.run { try co_await(parent) } == 400_000)
  }

  /// Each overload whose body runs on the default scheduler rejects a body that shares state
  /// with its launcher: every line marked `// rejected` gets a data-race error, and no other.
  @Test(.enabled(if: SwiftCompilerCheck.available != nil, SwiftCompilerCheck.missing))
  func aBodyThatSharesAVarWithItsLauncherDoesNotCompile() throws {
    let source = """
      import Coroutines

      final class Tally { var count = 0 }

      func counted(on group: CoroutineLoopGroup) throws -> Int {
        try co_await(on: group) { () -> Int in
          var count = 0
          let children = (0..<4).map { _ in
            co_launch { for _ in 0..<100_000 { count += 1 } }  // rejected
          }
          for child in children { try co_await(child) }
          return count
        }
      }

      func everyOverload() throws {
        var count = 0
        let tally = Tally()
        let scope = CoScope()
        let a = co_launch(name: "a") { count += 1 }  // rejected
        let b = co_launch(stack: .dedicated) { count += 1 }  // rejected
        let c = co_launch(detached: true) { tally.count += 1 }  // rejected
        let d = scope.launch { tally.count += 1 }  // rejected
        let e = co_actor { (mailbox: CoMailbox<Int, Int>) in  // rejected
          for message in mailbox { tally.count += message.value }
        }
        let f = co_sequence { (yield: CoYield<Int>) in try yield(tally.count) }  // rejected
        count += 1
        tally.count += 1
        _ = (a, b, c, d, e, f)
      }
      """
    let result = try SwiftCompilerCheck.run(source)
    #expect(result.status != 0, "\(result.output)")
    let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
    let rejected = Set(lines.indices.filter { lines[$0].contains("// rejected") }.map { $0 + 1 })
    #expect(rejected.count == 7)
    #expect(result.dataRaceErrorLines == rejected, "\(result.output)")
  }

  /// The same overloads accept what a body may share: values, `Sendable` objects, results
  /// handed back, and non-Sendable objects the launcher does not touch again.
  @Test(.enabled(if: SwiftCompilerCheck.available != nil, SwiftCompilerCheck.missing))
  func bodiesThatShareNothingUnsafeCompileWithoutWarnings() throws {
    let source = """
      import Coroutines

      final class Tally { var count = 0 }
      final class Totals: @unchecked Sendable {  // `count` only under `mutex`
        let mutex = CoMutex()
        var count = 0
      }

      func counted(on group: CoroutineLoopGroup) throws -> Int {
        try co_await(on: group) { () -> Int in
          let children = (0..<4).map { _ in
            co_launch { () -> Int in
              var count = 0
              for _ in 0..<100_000 { count += 1 }
              return count
            }
          }
          return try children.reduce(0) { try $0 + co_await($1) }
        }
      }

      func everyOverload(limit: Int) throws -> Int {
        let totals = Totals()
        let tally = Tally()
        let scope = CoScope()
        let a = co_launch(name: "a") { (0..<limit).reduce(0, +) }
        let b = co_launch(stack: .dedicated) { try totals.mutex.withLock { totals.count += 1 } }
        let c = co_launch(detached: true) { tally.count += 1 }  // not used here again
        let d = scope.launch { try totals.mutex.withLock { totals.count += limit } }
        let e = co_actor { (mailbox: CoMailbox<Int, Int>) in
          var sum = 0
          for message in mailbox {
            sum += message.value
            message.reply(sum)
          }
        }
        let squares = co_sequence { (yield: CoYield<Int>) in
          for n in 1...limit { try yield(n * n) }
        }
        _ = (b, c, d, e)
        return try co_await(a) + totals.mutex.withLock { totals.count } + squares.reduce(0, +)
      }
      """
    let result = try SwiftCompilerCheck.run(source)
    #expect(result.status == 0, "\(result.output)")
    #expect(!result.output.contains("warning:"), "\(result.output)")
  }
}

/// Compiles a file against this build's `Coroutines` module, through SIL diagnostics (where
/// Swift checks `sending` and regions; `-typecheck` stops before them), in Swift 6 mode.
enum SwiftCompilerCheck {
  struct Result {
    let status: Int32
    let output: String

    /// The lines (from 1) of the file with an error about a data race.
    var dataRaceErrorLines: Set<Int> {
      Set(
        output.split(separator: "\n").compactMap { line -> Int? in
          guard line.contains("error:"), line.contains("data race") else { return nil }
          let parts = line.split(separator: ":")
          guard parts.count > 2, parts[0].hasSuffix("checked.swift") else { return nil }
          return Int(parts[1])
        })
    }
  }

  /// The build directory of the running tests (it holds `Modules/` and the C targets' module
  /// maps), if this build's `Coroutines` module and a `swiftc` are there to compile against.
  static let available: URL? = {
    guard
      let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    else { return nil }
    let directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
    let needed = [
      "Modules/Coroutines.swiftmodule", "CUContext.build/module.modulemap",
      "CLinux.build/module.modulemap",
    ]
    guard
      needed.allSatisfy({
        FileManager.default.fileExists(atPath: directory.appendingPathComponent($0).path)
      }), swiftc != nil
    else { return nil }
    return directory
  }()

  static let missing: Comment =
    "no Coroutines module beside the test executable, or no swiftc on PATH: nothing to compile against"

  /// `swiftc` on PATH: the toolchain that built the tests.
  static let swiftc: URL? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    return path.split(separator: ":").lazy
      .map { URL(fileURLWithPath: String($0)).appendingPathComponent("swiftc") }
      .first { FileManager.default.isExecutableFile(atPath: $0.path) }
  }()

  static func run(_ source: String) throws -> Result {
    let build = try #require(available)
    let folder = FileManager.default.temporaryDirectory
      .appendingPathComponent("sendable-check-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("checked.swift")
    try source.write(to: file, atomically: true, encoding: .utf8)
    return try run(mode: "-emit-sil", files: [file], build: build)
  }

  /// Compiles `files` as one module with `mode` (`-emit-sil`, `-typecheck`).
  static func run(mode: String, files: [URL], build: URL) throws -> Result {
    let process = Process()
    process.executableURL = swiftc
    // A module cache of its own in the build directory: kept between runs, so that only the
    // first builds the clang modules (Glibc, the C targets), and apart from SwiftPM's, whose
    // modules record the paths SwiftPM gave them.
    let cache = build.appendingPathComponent("sendable-check-module-cache")
    let mapFlags = ["CUContext", "CLinux"].flatMap { target in
      [
        "-Xcc",
        "-fmodule-map-file="
          + build.appendingPathComponent("\(target).build/module.modulemap").path,
      ]
    }
    // Every file's errors, not only the first failing batch's.
    let output =
      mode == "-emit-sil" ? ["-o", "/dev/null"] : ["-continue-building-after-errors"]
    process.arguments =
      [mode] + output + [
        "-swift-version", "6", "-module-name", "checked",
        "-I", build.appendingPathComponent("Modules").path,
        "-module-cache-path", cache.path,
      ] + mapFlags + files.map(\.path)
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return Result(status: process.terminationStatus, output: text)
  }
}
