import Foundation
import Testing

@testable import Coroutines
@testable import ExamplesKit

/// The HTTP server over loopback, one behaviour per test, each with a server of its own on a
/// free port and timeouts short enough for the loop's timers to drive them.
@Suite(.serialized) struct HTTPServerIOTests {
  /// Runs a server and `body` beside it on one loop, stops the server, and returns what it
  /// counted; checks that every socket of the server's port, the server's and the clients',
  /// is closed. (Sockets of that port rather than every descriptor: the suites of another
  /// test target may be running meanwhile in this process.)
  @discardableResult
  private func withServer(
    threads: Int = 1, idleTimeout: Double = 5, headerTimeout: Double = 5,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping (HTTPServer) throws -> Void
  ) throws -> HTTPServerSummary {
    var configuration = HTTPServerConfiguration()
    configuration.threads = threads
    configuration.idleTimeout = idleTimeout
    configuration.headerTimeout = headerTimeout
    let group = threads > 1 ? CoroutineLoopGroup(threads: threads) : nil
    let port = Locked<UInt16>(0)
    let summary = try CoroutineLoop.run { () -> HTTPServerSummary in
      let server = try HTTPServer(configuration)
      port.withLock { $0 = server.port }
      let serving = co_launch { try server.serve(on: group) }
      do {
        try body(server)
      } catch {
        server.stop()
        _ = try? serving.await()
        throw error
      }
      server.stop()
      return try serving.await()
    }
    group?.shutdown()
    // A loop's own descriptors close as the last reference to it goes, maybe a moment later.
    let end = Date().addingTimeInterval(2)
    var leaked = openSockets(onPort: port.value)
    while !leaked.isEmpty, Date() < end {
      usleep(1000)
      leaked = openSockets(onPort: port.value)
    }
    #expect(leaked.isEmpty, "sockets left open: \(leaked.sorted())", sourceLocation: sourceLocation)
    return summary
  }

  private func get(_ path: String = "/", _ extra: String = "") -> String {
    "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\(extra)\r\n"
  }

  @Test func getSlashIsHelloWorldAndOtherPathsAre404() throws {
    let summary = try withServer { server in
      let client = try HTTPTestClient(port: server.port)
      defer { client.close() }
      try client.send(get())
      let hello = try #require(try client.response())
      // The check that every socket of the port is closed afterwards sees them: the listener,
      // the client's and the accepted connection.
      let sockets = openSockets(onPort: server.port)
      #expect(sockets.count == 3, "\(sockets)")
      #expect(hello.status == 200)
      #expect(hello.headers["content-type"] == "text/plain")
      #expect(hello.headers["content-length"] == "13")
      #expect(hello.body == "Hello, World!")
      try client.send(get("/elsewhere"))
      #expect(try client.response()?.status == 404)
      try client.send("HEAD / HTTP/1.1\r\n\r\n")
      let head = try #require(try client.response(headOnly: true))
      #expect(head.status == 200 && head.headers["content-length"] == "13")
      try client.send("DELETE / HTTP/1.1\r\n\r\n")
      let refused = try #require(try client.response())
      #expect(refused.status == 405 && refused.headers["allow"] == "GET, HEAD")
      // Still the same connection: HTTP/1.1 keeps it.
      try client.send(get("/?query=1"))
      #expect(try client.response()?.status == 200)
    }
    #expect(summary == HTTPServerSummary(requests: 5, connections: 1, errors: 0))
  }

  @Test func pipelinedRequestsAreAnsweredInOrder() throws {
    try withServer { server in
      let client = try HTTPTestClient(port: server.port)
      defer { client.close() }
      try client.send(get() + get("/a") + get() + get("/b"))
      let statuses = try (0..<4).map { _ in try client.response()?.status }
      #expect(statuses == [200, 404, 200, 404])
      // A request cut anywhere, the next one's start in the same write.
      let requests = get("/c") + get()
      let bytes = Array(requests.utf8)
      for cut in stride(from: 5, to: bytes.count, by: 11) {
        try client.stream.write(Array(bytes[..<cut]))
        try co_delay(0.001)
        try client.stream.write(Array(bytes[cut...]))
        #expect(try client.response()?.status == 404, "cut at \(cut)")
        #expect(try client.response()?.status == 200, "cut at \(cut)")
      }
    }
  }

  @Test func aMalformedRequestLineIs400ThenClose() throws {
    let summary = try withServer { server in
      let client = try HTTPTestClient(port: server.port)
      defer { client.close() }
      try client.send("GET / HTTP/1.1\r\n\r\nGET /\r\n\r\n" + get())
      #expect(try client.response()?.status == 200)
      let refused = try #require(try client.response())
      #expect(refused.status == 400 && refused.headers["connection"] == "close")
      #expect(try client.isClosedByServer())
    }
    #expect(summary.errors == 1)
  }

  @Test func aHeadOver8KiBIs431ThenClose() throws {
    // A head of exactly 8 KiB is answered; one byte more is refused.
    func request(length: Int) -> String {
      let start = "GET / HTTP/1.1\r\nX-Padding: "
      return start + String(repeating: "p", count: length - start.utf8.count - 4) + "\r\n\r\n"
    }
    try withServer { server in
      let fits = try HTTPTestClient(port: server.port)
      defer { fits.close() }
      try fits.send(request(length: 8192))
      #expect(try fits.response()?.status == 200)
      let over = try HTTPTestClient(port: server.port)
      defer { over.close() }
      try over.send(request(length: 8193))
      let refused = try #require(try over.response())
      #expect(refused.status == 431 && refused.headers["connection"] == "close")
      #expect(try over.isClosedByServer())
    }
  }

  @Test func aClientTooSlowToSendItsHeadIsClosed() throws {
    let summary = try withServer(headerTimeout: 0.2) { server in
      // One that sends nothing at all, and one that sends a byte every 20 ms (slowloris).
      let silent = try HTTPTestClient(port: server.port)
      defer { silent.close() }
      let slow = try HTTPTestClient(port: server.port)
      defer { slow.close() }
      let started = uptimeNanoseconds()
      let stream = slow.stream
      let trickle = co_launch { () -> Int in
        var sent = 0
        for byte in Array("GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ".utf8)
          + Array(
            repeating: UInt8(ascii: "z"), count: 200)
        {
          do { try stream.write([byte]) } catch { return sent }
          sent += 1
          try co_delay(0.02)
        }
        return sent
      }
      #expect(try silent.isClosedByServer())
      #expect(try slow.isClosedByServer())
      let seconds = Double(uptimeNanoseconds() - started) / 1e9
      #expect(seconds >= 0.2, "closed after \(seconds) s, before the header timeout")
      // Closed long before the trickle could have finished its 240 bytes.
      #expect(try trickle.await() < 240)
    }
    #expect(summary.errors == 2)
    #expect(summary.requests == 0)
  }

  @Test func anIdleConnectionIsClosedAfterTheIdleTimeout() throws {
    let summary = try withServer(idleTimeout: 0.2) { server in
      // Requests 50 ms apart keep the connection open past the idle timeout.
      let busy = try HTTPTestClient(port: server.port)
      defer { busy.close() }
      for _ in 0..<8 {
        try busy.send(get())
        #expect(try busy.response()?.status == 200)
        try co_delay(0.05)
      }
      let started = uptimeNanoseconds()
      #expect(try busy.isClosedByServer())
      let seconds = Double(uptimeNanoseconds() - started) / 1e9
      #expect(seconds >= 0.1, "closed after \(seconds) s idle, before the idle timeout")
    }
    // The idle timeout is an ordinary end, not an error.
    #expect(summary == HTTPServerSummary(requests: 8, connections: 1, errors: 0))
  }

  @Test func http10ClosesUnlessItAsksForKeepAlive() throws {
    try withServer { server in
      let plain = try HTTPTestClient(port: server.port)
      defer { plain.close() }
      try plain.send("GET / HTTP/1.0\r\n\r\n")
      let answer = try #require(try plain.response())
      #expect(answer.status == 200 && answer.headers["connection"] == "close")
      #expect(try plain.isClosedByServer())

      let kept = try HTTPTestClient(port: server.port)
      defer { kept.close() }
      for _ in 0..<2 {
        try kept.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let answer = try #require(try kept.response())
        #expect(answer.status == 200 && answer.headers["connection"] == "keep-alive")
      }
      // HTTP/1.1 asking to close is closed too.
      try kept.send(get("/", "Connection: close\r\n"))
      #expect(try kept.response()?.headers["connection"] == "close")
      #expect(try kept.isClosedByServer())
    }
  }

  @Test func aBodyIsSkippedAndAChunkedOneRefused() throws {
    try withServer { server in
      let client = try HTTPTestClient(port: server.port)
      defer { client.close() }
      try client.send("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nhello")
      try co_delay(0.01)
      try client.send("world" + get())
      #expect(try client.response()?.status == 405)
      #expect(try client.response()?.status == 200)
      try client.send(
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
      #expect(try client.response()?.status == 501)
      #expect(try client.isClosedByServer())
    }
  }

  @Test func stopFinishesTheRequestsInFlightAndClosesIdleConnections() throws {
    let summary = try withServer { server in
      let idle = try HTTPTestClient(port: server.port)
      defer { idle.close() }
      try idle.send(get())
      #expect(try idle.response()?.status == 200)
      let midway = try HTTPTestClient(port: server.port)
      defer { midway.close() }
      try midway.send("GET / HTTP/1.1\r\nHost: local")
      try co_delay(0.05)  // the server has read the first half
      server.stop()
      #expect(try idle.isClosedByServer())
      // A connection attempt now is refused: the listener is closed.
      #expect(throws: POSIXError.self) { _ = try HTTPTestClient(port: server.port) }
      try midway.send("host\r\n\r\n")
      let answer = try #require(try midway.response())
      #expect(answer.status == 200 && answer.headers["connection"] == "close")
      #expect(try midway.isClosedByServer())
    }
    #expect(summary == HTTPServerSummary(requests: 2, connections: 2, errors: 0))
  }

  @Test func outOfDescriptorsItBacksOffAndKeepsServing() throws {
    try withServer { server in
      // The next three accepts fail as if the process had no descriptor left.
      server.listenersForTesting[0].failingAcceptsForTesting.store(3, ordering: .relaxed)
      let client = try HTTPTestClient(port: server.port)
      defer { client.close() }
      try client.send(get())
      #expect(try client.response()?.status == 200)
      #expect(server.listenersForTesting[0].failingAcceptsForTesting.load(ordering: .relaxed) == 0)
    }
  }

  @Test func twoThreadsServeOnAGroup() throws {
    let summary = try withServer(threads: 2) { server in
      let clients = (0..<16).map { _ in
        co_launch { () -> Int? in
          let client = try HTTPTestClient(port: server.port)
          defer { client.close() }
          try client.send(get())
          return try client.response()?.status
        }
      }
      for client in clients {
        let status = try client.await()
        #expect(status == 200)
      }
    }
    #expect(summary == HTTPServerSummary(requests: 16, connections: 16, errors: 0))
  }

  @Test func theWalkthroughRunsItsClientsAgainstTheServer() throws {
    let narrator = Narrator.silent()
    let outcome = try HTTPWalkthrough.run(narrator: narrator)
    #expect(outcome.statuses == [200, 200, 404, 200, 400])
    #expect(narrator.messages.contains { $0.contains("func serve(_ connection: CoTCPStream") })
    // `examples http --walkthrough` runs it alone.
    let printed = Locked<[String]>([])
    let status = HTTPCommand.main(
      ["--walkthrough"], output: { line in printed.withLock { $0.append(line) } })
    #expect(status == 0)
    #expect(printed.value.contains { $0.contains("GET / → 200") })
  }

  @Test(.timeLimit(.minutes(1)), arguments: [SIGTERM, SIGINT])
  func aSignalStopsTheProgramWithASummaryAndStatus0(_ signal: Int32) throws {
    let program = try RunningProgram(["http", "--port", "0", "--threads", "2"])
    #expect(program.firstLine.hasPrefix("listening on http://127.0.0.1:"))
    let port = try #require(UInt16(program.firstLine.split(separator: ":").last ?? ""))
    let status = try CoroutineLoop.run { () -> Int? in
      let client = try HTTPTestClient(port: port)
      defer { client.close() }
      try client.send(get())
      return try client.response()?.status
    }
    #expect(status == 200)
    let stopped = try #require(program.stop(with: signal), "the program went on after the signal")
    #expect(stopped.status == 0)
    #expect(stopped.output == "served 1 request on 1 connection, 0 errors\n")
  }

  @Test(.timeLimit(.minutes(1)))
  func aSignalSentAsSoonAsTheFirstLineIsReadIsNotLost() throws {
    // The line is printed once the signals are taken: a signal sent before that would be
    // ignored and the program would serve on (seen 6 times in 20).
    for _ in 0..<10 {
      let program = try RunningProgram(["http", "--threads", "2"])
      let stopped = try #require(program.stop(with: SIGTERM), "the program went on after SIGTERM")
      #expect(stopped.status == 0)
      #expect(stopped.output == "served 0 requests on 0 connections, 0 errors\n")
    }
  }

  @Test func aServerRefusesABadConfiguration() {
    var configuration = HTTPServerConfiguration()
    configuration.threads = 0
    #expect(throws: HTTPCommand.UsageError.self) { _ = try HTTPServer(configuration) }
    configuration.threads = 1
    configuration.idleTimeout = .nan
    #expect(throws: HTTPCommand.UsageError.self) { _ = try HTTPServer(configuration) }
  }

  @Test func theProgramRefusesABadOptionAndExplainsItsOptions() {
    let printed = Locked<[String]>([])
    #expect(
      HTTPCommand.main(["--help"], output: { line in printed.withLock { $0.append(line) } }) == 0)
    #expect(printed.value == [HTTPCommand.usage])
    #expect(HTTPCommand.main(["--threads", "0"], output: { _ in }, errors: { _ in }) == 64)
    #expect(HTTPCommand.main(["--port"], output: { _ in }, errors: { _ in }) == 64)
    #expect(HTTPCommand.main(["--verbose", "1"], output: { _ in }, errors: { _ in }) == 64)
    guard
      case .success(let parsed) = HTTPCommand.parse([
        "--port", "8080", "--threads", "2", "--idle-timeout", "0.5", "--header-timeout", "1",
      ])
    else {
      Issue.record("valid options refused")
      return
    }
    #expect(parsed.port == 8080 && parsed.threads == 2)
    #expect(parsed.idleTimeout == 0.5 && parsed.headerTimeout == 1)
    #expect(
      ExamplesCommand.parse(["HTTP", "--port", "1"], known: ["http"], programs: ["http"])
        == .program("http", ["--port", "1"]))
  }
}
