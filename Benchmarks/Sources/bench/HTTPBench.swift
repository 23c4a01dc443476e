import Coroutines
import Foundation

/// The HTTP section: the `examples http` walkthrough's server against Go's `net/http`
/// (`GOMAXPROCS=1`) and SwiftNIO's `NIOHTTP1` (one EventLoop), each loaded by `wrk`, a load
/// generator nobody here wrote. `bench http` (or `bench --figure http`) runs it alone, in
/// about a minute.
enum HTTPBench {
  static let connections = 256
  static let seconds = 8
  /// The runs that compare `--threads 2` with `--threads 1`, unpinned.
  static let threadSeconds = 4

  static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../..").standardized
  static let ours = EchoServer(
    name: "ours, --threads 1",
    executable: packageRoot.appendingPathComponent(".build/release/examples"),
    arguments: ["http", "--port"])
  static let oursTwoThreads = EchoServer(
    name: "ours, --threads 2", executable: ours.executable,
    arguments: ["http", "--threads", "2", "--port"])
  static let nio = EchoServer(
    name: "SwiftNIO NIOHTTP1, one EventLoop", executable: EchoServer.sibling("http-nio"))
  static let goName = "Go net/http, GOMAXPROCS=1"

  /// What one `wrk` run measured, with the server's CPU time over it.
  struct Load {
    var requests = 0
    var requestsPerSecond = 0.0
    var p99Microseconds = 0.0
    var socketErrors = 0
    var non2xx = 0
    var serverCPUSeconds = 0.0
    var requestsPerCPUSecond: Double {
      serverCPUSeconds > 0 ? Double(requests) / serverCPUSeconds : 0
    }
  }

  static func runSection() throws {
    guard let wrk = wrkCommand() else {
      print("\nHTTP section skipped: wrk is missing and `apt-get install -y wrk` failed.")
      return
    }
    progress("http: building the examples program (swift build -c release --product examples)")
    try run(
      URL(fileURLWithPath: "/usr/bin/env"),
      ["swift", "build", "-c", "release", "--product", "examples"],
      in: packageRoot)
    let go = goServer()
    var servers = [ours, nio]
    if case .success(let server) = go { servers.append(server) }
    if case .failure(let reason) = go { progress("Go HTTP server skipped: \(reason)") }
    let loadAverage =
      (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
      .split(separator: " ").first ?? "?"

    var loads: [String: Load] = [:]
    for server in servers {
      progress("http, \(server.name), wrk -t1 -c\(connections) -d\(seconds)s, pinned")
      loads[server.name] = try measure(
        server, wrk, connections: connections, seconds: seconds, pinned: true)
    }
    var threadLoads: [String: Load] = [:]
    for server in [ours, oursTwoThreads] {
      progress("http, \(server.name), wrk -d\(threadSeconds)s, unpinned")
      threadLoads[server.name] = try measure(
        server, wrk, connections: connections, seconds: threadSeconds, pinned: false)
    }
    progress("http, ours, heap allocations per keep-alive request")
    let allocations = try allocationsPerRequest(wrk)
    progress("http, ours, wrk -c1000, then one GET")
    let (thousand, answered) = try thousandConnections(wrk)

    print("")
    print(
      "HTTP/1.1 (`wrk -t1 -c\(connections) -d\(seconds)s --latency`, GET / → 13-byte body, "
        + "keep-alive; wrk pinned to CPU 1, the server to CPU 0; server CPU is user + system "
        + "time from /proc/PID/stat over the run; load average \(loadAverage) before):")
    print("")
    print("| Server | Requests per server CPU-second | Requests/s | p99 | Socket errors |")
    print("|---|---:|---:|---:|---:|")
    for server in servers {
      guard let load = loads[server.name] else { continue }
      print(
        "| \(server.name) | \(Int(load.requestsPerCPUSecond)) | \(Int(load.requestsPerSecond)) "
          + String(format: "| %.0f µs ", load.p99Microseconds)
          + "| \(load.socketErrors + load.non2xx) |")
    }
    if case .failure(let reason) = go { print("\nGo's row is skipped: \(reason).") }
    print("")
    printTable(
      rows(
        loads, threadLoads, allocations: allocations, thousand: thousand, answered: answered,
        goSkipped: go.failureDescription))
    if case .success(let server) = go {
      try? FileManager.default.removeItem(at: server.executable)
    }
  }

  static func rows(
    _ loads: [String: Load], _ threadLoads: [String: Load], allocations: Double?,
    thousand: Load, answered: Bool, goSkipped: String?
  ) -> [Row] {
    let mine = loads[ours.name]
    let go = loads[goName]
    var rows: [Row] = []
    var perCPUGo = Row(
      figure: "HTTP requests per server CPU-second, \(ours.name)",
      ours: mine?.requestsPerCPUSecond, unit: "req/CPU s", baseline: goName,
      baselineValue: go?.requestsPerCPUSecond, target: 1, atLeast: true)
    perCPUGo.note = goSkipped
    rows.append(perCPUGo)
    rows.append(
      Row(
        figure: "HTTP requests per server CPU-second, \(ours.name)",
        ours: mine?.requestsPerCPUSecond, unit: "req/CPU s", baseline: nio.name,
        baselineValue: loads[nio.name]?.requestsPerCPUSecond, target: 1.2, atLeast: true))
    var rate = Row(
      figure: "HTTP requests/s, \(ours.name)", ours: mine?.requestsPerSecond, unit: "req/s",
      baseline: goName, baselineValue: go?.requestsPerSecond)
    rate.note = goSkipped
    rows.append(rate)
    rows.append(
      Row(
        figure: "HTTP requests/s, \(ours.name)", ours: mine?.requestsPerSecond, unit: "req/s",
        baseline: nio.name, baselineValue: loads[nio.name]?.requestsPerSecond))
    var p99 = Row(
      figure: "HTTP p99 latency, \(ours.name)", ours: mine?.p99Microseconds, unit: "µs",
      baseline: goName, baselineValue: go?.p99Microseconds, target: 1)
    p99.note = goSkipped
    rows.append(p99)
    rows.append(
      Row(
        figure: "HTTP requests/s, \(oursTwoThreads.name) (unpinned, \(threadSeconds) s)",
        ours: threadLoads[oursTwoThreads.name]?.requestsPerSecond, unit: "req/s",
        baseline: "\(ours.name), same conditions",
        baselineValue: threadLoads[ours.name]?.requestsPerSecond, target: 1.7, atLeast: true))
    // The cost per request with two loops: unlike the rate, it does not depend on the cores
    // the host had free.
    rows.append(
      Row(
        figure: "HTTP requests per server CPU-second, \(oursTwoThreads.name) (unpinned)",
        ours: threadLoads[oursTwoThreads.name]?.requestsPerCPUSecond, unit: "req/CPU s",
        baseline: "\(ours.name), same conditions",
        baselineValue: threadLoads[ours.name]?.requestsPerCPUSecond))
    rows.append(
      Row(
        figure: "HTTP heap allocations per keep-alive request, \(ours.name)", ours: allocations,
        unit: "allocations", baseline: "one allocation", baselineValue: 1, target: 1))
    var thousandRow = Row(
      figure: "HTTP wrk -c1000, \(ours.name): socket errors and non-2xx responses",
      ours: Double(thousand.socketErrors + thousand.non2xx), unit: "errors",
      baseline: "none, then a GET answered", baselineValue: nil)
    if thousand.socketErrors + thousand.non2xx > 0 || thousand.requests == 0 || !answered {
      thousandRow.shortfall =
        "\(thousand.requests) requests, "
        + (answered ? "GET answered after" : "GET unanswered after")
    }
    rows.append(thousandRow)
    return rows
  }

  /// The server started (pinned to CPU 0 if `pinned`), one wrk run against it, and its CPU
  /// time over the run.
  static func measure(
    _ server: EchoServer, _ wrk: URL, connections: Int, seconds: Int, pinned: Bool
  ) throws -> Load {
    let running = try server.start()
    defer { running.stop() }
    let pid = running.process.processIdentifier
    if pinned {
      try run(URL(fileURLWithPath: "/usr/bin/taskset"), ["-a", "-p", "-c", "0", "\(pid)"])
    }
    let before = cpuSeconds(of: pid)
    var load = try runWrk(
      wrk, port: running.port, connections: connections, seconds: seconds, cpu: pinned ? "1" : nil)
    load.serverCPUSeconds = cpuSeconds(of: pid) - before
    return load
  }

  /// Heap allocations per request on the keep-alive path: our server runs with a
  /// malloc-counting library preloaded (Benchmarks/Shim), which writes its count on SIGUSR2.
  /// It counts every allocation of the process, the library's and Foundation's included,
  /// which a counter in the server could not see. Two wrk runs of different lengths, each
  /// opening the same 64 connections: the difference of their counts over the difference of
  /// their requests leaves the connections' own allocations out.
  static func allocationsPerRequest(_ wrk: URL) throws -> Double? {
    let directory = packageRoot.appendingPathComponent("Benchmarks/.build")
    let library = directory.appendingPathComponent("malloc-count.so")
    let source = packageRoot.appendingPathComponent("Benchmarks/Shim/malloc-count.c")
    try run(
      URL(fileURLWithPath: "/usr/bin/env"),
      ["cc", "-shared", "-fPIC", "-O2", "-o", library.path, source.path])
    let countFile = directory.appendingPathComponent("malloc-count-\(getpid()).txt")
    defer { try? FileManager.default.removeItem(at: countFile) }
    var server = ours
    server.environment = ["LD_PRELOAD": library.path, "MALLOC_COUNT_FILE": countFile.path]
    let running = try server.start()
    defer { running.stop() }
    func count() -> Double? {
      try? FileManager.default.removeItem(at: countFile)
      kill(running.process.processIdentifier, SIGUSR2)
      for _ in 0..<200 {
        if let text = try? String(contentsOf: countFile, encoding: .utf8),
          let value = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
        {
          return value
        }
        usleep(5_000)
      }
      return nil
    }
    _ = try runWrk(wrk, port: running.port, connections: 64, seconds: 1, cpu: nil)  // warm-up
    guard let start = count() else { return nil }
    let short = try runWrk(wrk, port: running.port, connections: 64, seconds: 1, cpu: nil)
    guard let middle = count() else { return nil }
    let long = try runWrk(wrk, port: running.port, connections: 64, seconds: 3, cpu: nil)
    guard let end = count(), long.requests > short.requests else { return nil }
    return ((end - middle) - (middle - start)) / Double(long.requests - short.requests)
  }

  /// wrk with 1 000 connections for 3 s, then one GET on a new connection.
  static func thousandConnections(_ wrk: URL) throws -> (Load, Bool) {
    let running = try ours.start()
    defer { running.stop() }
    let load = try runWrk(wrk, port: running.port, connections: 1000, seconds: 3, cpu: nil)
    let port = running.port
    let answered = try CoroutineLoop.run { () -> Bool in
      let stream = try CoTCPStream.connect(host: "127.0.0.1", port: port, timeout: 5)
      defer { stream.close() }
      try stream.write(Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8), timeout: 5)
      var reply: [UInt8] = []
      while !String(decoding: reply, as: UTF8.self).hasSuffix("Hello, World!") {
        let bytes = try stream.read(upTo: 4096, timeout: 5)
        if bytes.isEmpty { return false }
        reply += bytes
      }
      return String(decoding: reply, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK")
    }
    return (load, answered)
  }

  /// One `wrk -t1 --latency` run, pinned to `cpu` if given, and what it printed.
  static func runWrk(_ wrk: URL, port: UInt16, connections: Int, seconds: Int, cpu: String?)
    throws -> Load
  {
    var arguments = [
      "-t1", "-c\(connections)", "-d\(seconds)s", "--latency", "http://127.0.0.1:\(port)/",
    ]
    var executable = wrk
    if let cpu {
      arguments = ["-c", cpu, wrk.path] + arguments
      executable = URL(fileURLWithPath: "/usr/bin/taskset")
    }
    let output = try run(executable, arguments)
    var load = Load()
    for line in output.split(separator: "\n") {
      let words = line.split(separator: " ")
      if line.contains("requests in"), let count = words.first.flatMap({ Int($0) }) {
        load.requests = count
      } else if line.hasPrefix("Requests/sec:"), let value = words.last.flatMap({ Double($0) }) {
        load.requestsPerSecond = value
      } else if words.first == "99%", let value = words.last.flatMap(microseconds) {
        load.p99Microseconds = value
      } else if line.contains("Socket errors:") {
        // "Socket errors: connect 0, read 0, write 0, timeout 0"
        load.socketErrors = words.compactMap { Int($0.trimmingCharacters(in: [","])) }.reduce(0, +)
      } else if line.contains("Non-2xx"), let value = words.last.flatMap({ Int($0) }) {
        load.non2xx = value
      }
    }
    return load
  }

  /// `20.05ms`, `812.00us`, `1.20s` in microseconds.
  static func microseconds(_ text: Substring) -> Double? {
    for (suffix, scale) in [("us", 1.0), ("ms", 1e3), ("s", 1e6)] where text.hasSuffix(suffix) {
      return Double(text.dropLast(suffix.count)).map { $0 * scale }
    }
    return nil
  }

  /// User and system time of process `pid`, all its threads, in seconds.
  static func cpuSeconds(of pid: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return 0 }
    // After "pid (name)": state is the first field, utime the 12th and stime the 13th.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12])
    else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
  }

  /// wrk from the PATH, installed with apt-get if it is missing.
  static func wrkCommand() -> URL? {
    if let found = onPath("wrk") { return found }
    progress("http: wrk is missing, installing it (apt-get install -y wrk)")
    _ = try? run(URL(fileURLWithPath: "/usr/bin/env"), ["apt-get", "install", "-y", "wrk"])
    return onPath("wrk")
  }

  static func onPath(_ name: String) -> URL? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    return path.split(separator: ":").map {
      URL(fileURLWithPath: String($0)).appendingPathComponent(name)
    }
    .first { FileManager.default.isExecutableFile(atPath: $0.path) }
  }

  /// Go's server, built from Benchmarks/Go/http.go into Benchmarks/.build, or why not.
  static func goServer() -> Result<EchoServer, HTTPBenchError> {
    guard let go = onPath("go") else { return .failure(.goMissing) }
    let binary = packageRoot.appendingPathComponent("Benchmarks/.build/http-go-\(getpid())")
    let source = packageRoot.appendingPathComponent("Benchmarks/Go/http.go")
    do {
      try run(go, ["build", "-o", binary.path, source.path])
    } catch {
      return .failure(.failed("go build of Benchmarks/Go/http.go"))
    }
    return .success(
      EchoServer(name: goName, executable: binary, environment: ["GOMAXPROCS": "1"]))
  }

  /// Runs `executable` to its end and returns its standard output; throws unless it exits 0.
  @discardableResult
  static func run(_ executable: URL, _ arguments: [String], in directory: URL? = nil) throws
    -> String
  {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw HTTPBenchError.failed(
        ([executable.lastPathComponent] + arguments).joined(separator: " "))
    }
    return String(decoding: data, as: UTF8.self)
  }
}

enum HTTPBenchError: Error, CustomStringConvertible {
  case failed(String)
  case goMissing

  var description: String {
    switch self {
    case .failed(let command): "`\(command)` failed"
    case .goMissing: "go is not on the PATH"
    }
  }
}

extension Result {
  /// The failure's description, nil on success.
  fileprivate var failureDescription: String? {
    if case .failure(let error) = self { return "\(error)" }
    return nil
  }
}
