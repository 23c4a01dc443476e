import Foundation
import Testing

/// Runs one test of this very test binary in a child process, for behaviour that ends a process
/// (a stack overflow report, a failed precondition).
///
/// Why the test binary and not the `examples` executable: it is always built and always the
/// one running (`/proc/self/exe`, with whatever sanitizer the suite was built with), and the
/// child-side code stays beside the test that checks it. The child-side test is a normal
/// Swift Testing test that is enabled only when `COROUTINES_TEST_CHILD` names it, so in a plain
/// `swift test` it is skipped; the parent starts the binary the way `swift test` does
/// (`--testing-library swift-testing --filter <name>`) with that variable set.
enum ChildProcess {
  static let variable = "COROUTINES_TEST_CHILD"

  /// True inside a child started for `role`.
  static func isRunning(_ role: String) -> Bool {
    ProcessInfo.processInfo.environment[variable] == role
  }

  /// How a child ended.
  struct Outcome {
    /// The exit status, or the signal number when `signaled`.
    let status: Int32
    let signaled: Bool
    /// Standard output and standard error, interleaved.
    let output: String
  }

  /// The role a parent gave this child, if it is one.
  static var role: String? { ProcessInfo.processInfo.environment[variable] }

  /// Runs the test named `test` (by default `role`) in a child process with `role` set, and
  /// waits for it to end.
  static func run(
    _ role: String, test: String? = nil, environment extra: [String: String] = [:]
  ) throws -> Outcome {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = ["--testing-library", "swift-testing", "--filter", test ?? role]
    var environment = ProcessInfo.processInfo.environment
    environment[variable] = role
    // Swift's backtracer would add seconds and pages of output to every deliberate crash.
    environment["SWIFT_BACKTRACE"] = "enable=no"
    environment.merge(extra) { _, new in new }
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Outcome(
      status: process.terminationStatus,
      signaled: process.terminationReason == .uncaughtSignal,
      output: String(decoding: data, as: UTF8.self))
  }
}
