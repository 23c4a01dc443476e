import Foundation

/// One server under test: how to start it. Each prints `port=N` (or, the HTTP walkthrough,
/// `listening on http://127.0.0.1:N`) once it listens and runs until it is sent SIGTERM.
struct EchoServer {
  var name: String
  var executable: URL
  var arguments: [String] = []
  var environment: [String: String] = [:]

  /// This package's executables sit beside the benchmark's own.
  static let buildDirectory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    .deletingLastPathComponent()

  static func sibling(_ name: String) -> URL {
    buildDirectory.appendingPathComponent(name)
  }

  /// Starts the server and waits for the port it prints.
  func start() throws -> RunningServer {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments + ["0"]
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    StartedServers.add(process)
    let line = readLine(from: output.fileHandleForReading)
    let announced = line.flatMap {
      $0.keyValues["port"]
        ?? ($0.hasPrefix("listening on http://")
          ? $0.split(separator: ":").last.flatMap {
            Double($0)
          } : nil)
    }
    guard let port = announced.flatMap({ UInt16(exactly: $0) }) else {
      process.terminate()
      process.waitUntilExit()
      StartedServers.remove(process)
      throw EchoBenchError.serverDidNotStart(name, line ?? "end of output")
    }
    return RunningServer(process: process, port: port)
  }
}

/// A started server process, stopped with ``stop()``.
struct RunningServer {
  let process: Process
  let port: UInt16

  /// The server's resident set in KiB (VmRSS from /proc/PID/status).
  var residentKiB: Double {
    let status =
      (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8))
      ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
    return line.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
  }

  /// How many descriptors the server has open: its accepted connections show up here.
  var openDescriptors: Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd"))?
      .count ?? 0
  }

  func stop() {
    process.terminate()
    process.waitUntilExit()
    StartedServers.remove(process)
  }
}

/// The load generator, `echoload`, run as a process of its own.
enum EchoLoad {
  static let executable = EchoServer.sibling("echoload")

  /// Runs the load against `server` and returns the generator's figures
  /// (`requests_per_second`, `p50_us`, `p99_us`, `errors`, `unanswered`, `server_cpu_us`, …).
  /// Unless `pinned` is false, the generator and the server each get a core of their own.
  static func run(
    against server: RunningServer, connections: Int, warmup: Double, seconds: Double,
    pinned: Bool = true
  ) throws -> [String: Double] {
    let process = Process()
    process.executableURL = executable
    process.arguments = [
      "--port", String(server.port), "--connections", String(connections), "--warmup",
      String(warmup), "--seconds", String(seconds), "--size", "64", "--server-pid",
      String(server.process.processIdentifier),
    ]
    // A core each (see echoload's --cpu) when there are two or more.
    if pinned, ProcessInfo.processInfo.activeProcessorCount >= 2 {
      process.arguments! += ["--cpu", "1", "--server-cpu", "0"]
    }
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let figures = String(decoding: data, as: UTF8.self).keyValues
    guard process.terminationStatus == 0, figures["requests_per_second"] != nil else {
      throw EchoBenchError.loadFailed(process.terminationStatus)
    }
    return figures
  }

  /// Opens `connections` idle connections to `port` and keeps them open until the returned
  /// process's standard input is closed.
  static func idle(port: UInt16, connections: Int) throws -> (Process, Pipe) {
    let process = Process()
    process.executableURL = executable
    process.arguments = ["--port", String(port), "--connections", String(connections), "--idle"]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    guard let line = readLine(from: output.fileHandleForReading),
      line.keyValues["connected"] == Double(connections)
    else {
      try? input.fileHandleForWriting.close()
      process.waitUntilExit()
      throw EchoBenchError.idleConnectionsFailed(connections)
    }
    return (process, input)
  }
}

/// Go's echo server, built from Benchmarks/Go/echo.go when `go` is on the PATH.
enum GoEchoServer {
  static let name = "Go, goroutine per connection, GOMAXPROCS=1"
  static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../Go/echo.go").standardized

  static var goCommand: URL? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    return path.split(separator: ":").map {
      URL(fileURLWithPath: String($0)).appendingPathComponent("go")
    }
    .first { FileManager.default.isExecutableFile(atPath: $0.path) }
  }

  /// The server, built into a temporary directory and run with `GOMAXPROCS=1`, or why not.
  static func build() -> Result<EchoServer, EchoBenchError> {
    guard let go = goCommand else { return .failure(.goMissing) }
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("echo-go-\(getpid())")
    let binary = directory.appendingPathComponent("echo")
    let process = Process()
    process.executableURL = go
    process.arguments = ["build", "-o", binary.path, source.path]
    do {
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      try process.run()
      process.waitUntilExit()
    } catch {
      return .failure(.goBuildFailed)
    }
    guard process.terminationStatus == 0 else { return .failure(.goBuildFailed) }
    return .success(
      EchoServer(
        name: name, executable: binary,
        environment: ["GOMAXPROCS": "1"]))
  }
}

enum EchoBenchError: Error, CustomStringConvertible {
  case serverDidNotStart(String, String)
  case loadFailed(Int32)
  case idleConnectionsFailed(Int)
  case notAccepted(String, Int)
  case goMissing
  case goBuildFailed

  var description: String {
    switch self {
    case .serverDidNotStart(let name, let line):
      "the \(name) echo server did not print its port (it printed: \(line))"
    case .loadFailed(let status): "echoload exited with status \(status)"
    case .idleConnectionsFailed(let count): "echoload could not open \(count) idle connections"
    case .notAccepted(let name, let count):
      "the \(name) echo server accepted only \(count) idle connections in 30 s"
    case .goMissing: "go is not on the PATH"
    case .goBuildFailed: "go build of Benchmarks/Go/echo.go failed"
    }
  }
}

/// One line from `handle`, without its newline; nil at end of output before any byte.
private func readLine(from handle: FileHandle) -> String? {
  var bytes: [UInt8] = []
  while true {
    guard let data = try? handle.read(upToCount: 1), let byte = data.first else {
      return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }
    if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
    bytes.append(byte)
  }
}

extension String {
  /// The `key=value` pairs of a line such as `requests_per_second=1000 p99_us=12.5`.
  var keyValues: [String: Double] {
    var pairs: [String: Double] = [:]
    for token in split(whereSeparator: { $0 == " " || $0 == "\n" }) {
      let parts = token.split(separator: "=", maxSplits: 1)
      if parts.count == 2, let value = Double(parts[1]) { pairs[String(parts[0])] = value }
    }
    return pairs
  }
}
