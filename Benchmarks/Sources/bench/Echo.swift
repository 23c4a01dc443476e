import Foundation

/// The loopback echo benchmark: this library's echo server (a coroutine per connection, on
/// dedicated and on shared stacks) against SwiftNIO's on one event loop and Go's with
/// `GOMAXPROCS=1`, each driven by the C load generator `echoload` in a process of its own.
/// `bench echo` runs this section alone.
enum Echo {
  static let connectionCounts = [1_000, 4_000]
  static let warmupSeconds = 0.5
  static let measuredSeconds = 1.5
  /// Each server runs this many times per connection count, taking turns with the others; the
  /// run with the most requests per second is kept, as the timed figures keep their fastest,
  /// and the least server CPU per request of any run.
  static let rounds = 4
  static let idleConnections = 5_000
  /// The budget for our resident memory per idle connection on shared stacks, in KiB.
  static let idleBudgetKiB = 2.0

  /// What one load run measured.
  struct LoadResult {
    var requestsPerSecond: Double
    var p50: Double
    var p99: Double
    /// Connections that failed or never got an answer.
    var errors: Int
    /// The server's CPU time per request in µs (all its threads, user and system): unlike the
    /// rate, it hardly moves when other work on the host takes the server's core.
    var serverCPU: Double?
    /// The load generator's own CPU use in the measured window, in percent of one core.
    var generatorCPU: Double

    init(_ figures: [String: Double]) {
      requestsPerSecond = figures["requests_per_second"] ?? 0
      p50 = figures["p50_us"] ?? 0
      p99 = figures["p99_us"] ?? 0
      errors = Int((figures["errors"] ?? 0) + (figures["unanswered"] ?? 0))
      serverCPU = figures["server_cpu_us"]
      generatorCPU = figures["load_cpu_percent"] ?? 0
    }
  }

  static let oursDedicated = EchoServer(
    name: "ours, dedicated stacks", executable: EchoServer.sibling("echo-coroutines"))
  static let oursShared = EchoServer(
    name: "ours, shared stacks", executable: EchoServer.sibling("echo-coroutines"),
    arguments: ["--shared"])
  /// Ours with a 4 KiB buffer that each connection keeps for its life (`read(into:)`), where
  /// the others read with `read(upTo:)`, which holds no buffer while waiting.
  static let oursSharedOwnBuffer = EchoServer(
    name: "ours, shared stacks, own 4 KiB buffer per connection",
    executable: EchoServer.sibling("echo-coroutines"), arguments: ["--shared", "--own-buffer"])
  static let nio = EchoServer(
    name: "SwiftNIO, one EventLoop", executable: EchoServer.sibling("echo-nio"))

  static func runSection() throws {
    // The host is shared: its load average tells how busy it was when the section began.
    let loadAverage =
      (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
      .split(separator: " ").first ?? "?"
    let go = GoEchoServer.build()
    var servers = [oursDedicated, oursShared, nio]
    switch go {
    case .success(let server): servers.append(server)
    case .failure(let reason): progress("Go echo server skipped: \(reason)")
    }
    defer {
      // The Go build's temporary directory.
      if case .success(let server) = go {
        try? FileManager.default.removeItem(at: server.executable.deletingLastPathComponent())
      }
    }

    var results: [String: [Int: LoadResult]] = [:]
    // Rounds outermost: each server's runs spread over the whole section, so that a busy
    // stretch of the shared host falls on every server alike rather than on one's turn.
    for round in 1...rounds {
      for connections in connectionCounts {
        for server in servers {
          progress("echo, \(server.name), \(connections) connections, round \(round)")
          var result = try load(server, connections: connections)
          if let best = results[server.name]?[connections] {
            // The least CPU per request of any round, beside the fastest round's rate; the
            // failed connections of every round.
            let leastCPU = [best.serverCPU, result.serverCPU].compactMap { $0 }.min()
            let errors = best.errors + result.errors
            if best.requestsPerSecond > result.requestsPerSecond { result = best }
            result.serverCPU = leastCPU
            result.errors = errors
          }
          results[server.name, default: [:]][connections] = result
        }
      }
    }
    var memory: [String: Double] = [:]
    for server in [oursSharedOwnBuffer] + servers {
      progress("echo, \(server.name), \(idleConnections) idle connections")
      memory[server.name] = try residentPerIdleConnection(server)
    }

    print("")
    print(
      "Loopback echo (64-byte requests, one in flight per connection; echoload, one epoll thread "
        + "in its own process pinned to CPU 1, the server pinned to CPU 0; "
        + "\(warmupSeconds) s warm-up, \(measuredSeconds) s measured, \(rounds) runs: "
        + "rate and latency of the fastest, the least server CPU per request; load average "
        + "\(loadAverage) before the section):")
    print("")
    print(
      "| Server | Connections | Requests/s | p50 | p99 | Server CPU per request "
        + "| Generator CPU | Errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for connections in connectionCounts {
      for server in servers {
        guard let result = results[server.name]?[connections] else { continue }
        print(
          "| \(server.name) | \(grouped(connections)) | \(grouped(Int(result.requestsPerSecond))) "
            + String(format: "| %.0f µs | %.0f µs | ", result.p50, result.p99)
            + (result.serverCPU.map { String(format: "%.2f µs", $0) } ?? "—")
            + String(format: " | %.0f %% | ", result.generatorCPU) + "\(result.errors) |")
      }
    }
    print("")
    print(
      "Server CPU per request: user and system time of all the server's threads over the "
        + "measured window. A generator CPU near 100 % means the generator, not the server, set "
        + "the rate; CPU per request moves less with the host's other work than the rate does.")
    if case .failure(let reason) = go { print("\nGo's row is skipped: \(reason).") }
    print("")
    printTable(rows(results: results, memory: memory, goSkipped: go.skipReason))
  }

  /// The server started, loaded for the warm-up and the measured time, and stopped.
  static func load(_ server: EchoServer, connections: Int) throws -> LoadResult {
    let running = try server.start()
    defer { running.stop() }
    return LoadResult(
      try EchoLoad.run(
        against: running, connections: connections, warmup: warmupSeconds,
        seconds: measuredSeconds))
  }

  /// The server's resident memory per connection, in KiB, with `idleConnections` connections
  /// accepted and waiting for a first request that never comes.
  static func residentPerIdleConnection(_ server: EchoServer) throws -> Double {
    let running = try server.start()
    defer { running.stop() }
    usleep(200_000)
    let descriptorsBefore = running.openDescriptors
    let before = running.residentKiB
    let (client, input) = try EchoLoad.idle(port: running.port, connections: idleConnections)
    defer {
      try? input.fileHandleForWriting.close()
      client.waitUntilExit()
    }
    // Accepted once the server holds a descriptor per connection; then the resident set is
    // read until it has stopped moving (each connection's first read has started waiting).
    let deadline = Date().addingTimeInterval(30)
    while running.openDescriptors < descriptorsBefore + idleConnections {
      guard Date() < deadline else {
        throw EchoBenchError.notAccepted(server.name, running.openDescriptors - descriptorsBefore)
      }
      usleep(50_000)
    }
    var after = running.residentKiB
    var unchanged = 0
    while unchanged < 3, Date() < deadline {
      usleep(200_000)
      let now = running.residentKiB
      unchanged = now == after ? unchanged + 1 : 0
      after = now
    }
    return (after - before) / Double(idleConnections)
  }

  static func rows(
    results: [String: [Int: LoadResult]], memory: [String: Double], goSkipped: String?
  ) -> [Row] {
    var rows: [Row] = []
    let goName = GoEchoServer.name
    for connections in connectionCounts {
      let nioResult = results[nio.name]?[connections]
      let goResult = results[goName]?[connections]
      for ours in [oursDedicated, oursShared] {
        let result = results[ours.name]?[connections]
        let label = "echo, \(grouped(connections)) connections, \(ours.name)"
        let errors = (result?.errors ?? 0) > 0 ? "\(result!.errors) connections failed" : nil
        var versusNIO = Row(
          figure: "requests/s, \(label)", ours: result?.requestsPerSecond, unit: "req/s",
          baseline: nio.name, baselineValue: nioResult?.requestsPerSecond, target: 1.2,
          atLeast: true)
        versusNIO.shortfall = errors
        rows.append(versusNIO)
        var versusGo = Row(
          figure: "requests/s, \(label)", ours: result?.requestsPerSecond, unit: "req/s",
          baseline: "Go, GOMAXPROCS=1", baselineValue: goResult?.requestsPerSecond, target: 1,
          atLeast: true)
        versusGo.note = goSkipped
        versusGo.shortfall = errors
        rows.append(versusGo)
        var p99 = Row(
          figure: "p99 latency, \(label)", ours: result?.p99, unit: "µs",
          baseline: "Go, GOMAXPROCS=1", baselineValue: goResult?.p99, target: 1.5)
        p99.note = goSkipped
        p99.shortfall = errors
        rows.append(p99)
        // The rate targets per core of the server: CPU per request hardly moves with the host's
        // other work, and is not capped by the generator's core as the rate is.
        rows.append(
          Row(
            figure: "server CPU per request, \(label)", ours: result?.serverCPU, unit: "µs",
            baseline: nio.name, baselineValue: nioResult?.serverCPU, target: 1 / 1.2))
        var cpuVersusGo = Row(
          figure: "server CPU per request, \(label)", ours: result?.serverCPU, unit: "µs",
          baseline: "Go, GOMAXPROCS=1", baselineValue: goResult?.serverCPU, target: 1)
        cpuVersusGo.note = goSkipped
        rows.append(cpuVersusGo)
      }
    }
    let count = grouped(idleConnections)
    rows.append(
      Row(
        figure: "resident memory per idle connection, \(count) idle, \(oursShared.name)",
        ours: memory[oursShared.name], unit: "KiB", baseline: "2 KiB budget",
        baselineValue: idleBudgetKiB, target: 1))
    rows.append(
      Row(
        figure: "resident memory per idle connection, \(count) idle, \(oursSharedOwnBuffer.name)",
        ours: memory[oursSharedOwnBuffer.name], unit: "KiB", baseline: "2 KiB budget",
        baselineValue: idleBudgetKiB))
    rows.append(
      Row(
        figure: "resident memory per idle connection, \(count) idle, \(oursDedicated.name)",
        ours: memory[oursDedicated.name], unit: "KiB", baseline: "2 KiB budget",
        baselineValue: idleBudgetKiB))
    for (baseline, name) in [(nio.name, nio.name), ("Go, GOMAXPROCS=1", goName)] {
      var row = Row(
        figure: "resident memory per idle connection, \(count) idle, \(oursShared.name)",
        ours: memory[oursShared.name], unit: "KiB", baseline: baseline,
        baselineValue: memory[name])
      if name == goName { row.note = goSkipped }
      rows.append(row)
    }
    return rows
  }

  private static func grouped(_ value: Int) -> String {
    value.formatted(.number.grouping(.automatic)).replacingOccurrences(of: ",", with: " ")
  }
}

extension Result {
  /// The failure's description, nil on success.
  fileprivate var skipReason: String? {
    if case .failure(let error) = self { return "\(error)" }
    return nil
  }
}
