import Coroutines
import Foundation

/// An HTTP/1.1 server, a coroutine per connection, and a few clients talking to it over
/// loopback. `swift run -c release examples http` runs the server alone, for `wrk` or `curl`.
public enum HTTPWalkthrough {
  /// The entry for `swift run examples http`.
  public static let walkthrough = Walkthrough(
    name: "http",
    summary: "an HTTP/1.1 server, a coroutine per connection (`examples http` serves for wrk)",
    program: { HTTPCommand.main($0) }
  ) { narrator in
    try run(narrator: narrator)
  }

  /// What the clients of the narrated run saw.
  public struct Outcome: Sendable, Equatable {
    /// The status of each response, in the order the requests were sent.
    public var statuses: [Int] = []
    /// The bodies of the two pipelined responses.
    public var pipelined: [String] = []
    /// Whether the server closed the HTTP/1.0 connection after its response.
    public var closedAfterHTTP10 = false
    /// What the server counted.
    public var summary = HTTPServerSummary()
  }

  /// Starts the server on a free port, sends it a few requests, stops it, and narrates.
  @discardableResult
  public static func run(narrator: Narrator) throws -> Outcome {
    narrator.say(
      "one loop, one thread: the server's accept loop, a coroutine per connection, and the "
        + "clients below, all coroutines over real loopback sockets")
    let outcome = try CoroutineLoop.run { () -> Outcome in
      let server = try HTTPServer(HTTPServerConfiguration())
      let serving = co_launch { try server.serve() }
      var outcome = Outcome()
      let client = try HTTPTestClient(port: server.port)
      defer { client.close() }
      try client.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
      let hello = try require(client.response())
      narrator.say("GET / → \(hello.status), \"\(hello.body)\"")
      try client.send(
        "GET / HTTP/1.1\r\nHost: localhost\r\n\r\nGET /missing HTTP/1.1\r\nHost: localhost\r\n\r\n")
      let first = try require(client.response())
      let second = try require(client.response())
      narrator.say(
        "two requests in one write (pipelined) → \(first.status) then \(second.status), in order, "
          + "on the same connection")
      outcome.statuses = [hello.status, first.status, second.status]
      outcome.pipelined = [first.body, second.body]

      let old = try HTTPTestClient(port: server.port)
      defer { old.close() }
      try old.send("GET / HTTP/1.0\r\n\r\n")
      let answer = try require(old.response())
      outcome.closedAfterHTTP10 = try old.isClosedByServer()
      outcome.statuses.append(answer.status)
      narrator.say(
        "an HTTP/1.0 request → \(answer.status), then the server closes: "
          + (outcome.closedAfterHTTP10 ? "closed" : "still open"))

      let bad = try HTTPTestClient(port: server.port)
      defer { bad.close() }
      try bad.send("GET /\r\n\r\n")
      let refused = try require(bad.response())
      outcome.statuses.append(refused.status)
      narrator.say("a request line without a version → \(refused.status), then close")

      server.stop()
      outcome.summary = try serving.await()
      narrator.say("stopped: \(outcome.summary.line)")
      return outcome
    }
    try check(outcome)
    show(narrator)
    return outcome
  }

  /// Throws unless the clients saw what the server promises.
  public static func check(_ outcome: Outcome) throws {
    guard outcome.statuses == [200, 200, 404, 200, 400] else {
      throw WalkthroughCheckFailed(
        "statuses \(outcome.statuses), expected [200, 200, 404, 200, 400]")
    }
    guard outcome.pipelined == ["Hello, World!", "Not Found"] else {
      throw WalkthroughCheckFailed("pipelined bodies \(outcome.pipelined)")
    }
    guard outcome.closedAfterHTTP10 else {
      throw WalkthroughCheckFailed("the HTTP/1.0 connection stayed open")
    }
    guard outcome.summary.requests == 5, outcome.summary.errors == 1 else {
      throw WalkthroughCheckFailed("the server counted \(outcome.summary.line)")
    }
  }

  private static func require(_ response: HTTPClientResponse?) throws -> HTTPClientResponse {
    guard let response else { throw WalkthroughCheckFailed("the server closed without answering") }
    return response
  }

  private static func show(_ narrator: Narrator) {
    narrator.show("")
    narrator.show(
      "  Each connection is one coroutine running the loop below: read, parse, answer, read "
        + "again. A read that finds nothing suspends the coroutine, not the thread, so the code "
        + "says what happens in the order it happens. An event-loop server (NIO's "
        + "ChannelHandler, a callback per chunk) must keep the half-read head, the pending "
        + "body and the keep-alive state in an object between calls; here they are local "
        + "variables, and a timeout or a stop is an error thrown from the read.")
    guard let source = SourceLines.text(region: "connection", inFile: httpServerSource) else {
      narrator.show("  (the server's source is not beside this binary)")
      return
    }
    let lines = SourceLines.count(region: "connection", inFile: httpServerSource)
    narrator.show("")
    narrator.show("  The connection's code, \(lines.map(String.init) ?? "?") lines:")
    narrator.show("")
    for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
      narrator.show("    " + line)
    }
    narrator.show("")
    narrator.show(
      "  `swift run -c release examples http --port 8080` serves until Ctrl-C; try "
        + "`curl -i http://127.0.0.1:8080/` or `wrk -c256 -d8s http://127.0.0.1:8080/`.")
  }
}
