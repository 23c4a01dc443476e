import Foundation

/// Runs the test `filter` names in a fresh process of this test binary, with `variable` set in
/// its environment (the child test does its work only when it finds it); returns the exit
/// status and everything the child printed. For what only a new process shows: its first
/// launch, its exit.
func runTestInChildProcess(_ filter: String, setting variable: String) throws -> (
  status: Int32, printed: String
) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
  process.arguments = ["--testing-library", "swift-testing", "--filter", filter]
  process.environment = ProcessInfo.processInfo.environment.merging([variable: "1"]) { $1 }
  let output = Pipe()
  process.standardOutput = output
  process.standardError = output
  try process.run()
  let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  process.waitUntilExit()
  return (process.terminationStatus, printed)
}
