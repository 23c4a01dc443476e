import Foundation
import Testing

@testable import Coroutines

/// The samples of "Testing networked code" in Docs/Coroutines.docc/Articles/Testing.md.
@Suite struct TestingNetworkedCodeArticleTests {
  @Test func aClientGivesUpDuringAPartitionAndSucceedsAfterTheRepair() throws {
    let loop = CoroutineTestLoop(seed: 1)
    let network = CoSimulatedNetwork(on: loop)
    let server = network.addHost("server")
    let client = network.addHost("client")
    server.launch { try runEchoServer(port: 7) }

    network.partition(server, client)
    let cut = client.launch { try askEcho("ping", host: "server", timeout: 5) }
    loop.advance(by: 10)
    #expect(throws: CoroutineError.timedOut) { try cut.result?.get() }

    network.repair(server, client)
    let healed = client.launch { try askEcho("ping", host: "server", timeout: 5) }
    loop.advance(by: 1)
    #expect(try healed.result?.get() == "ping")
    // The test ends what it started: the crash cancels the server's coroutines.
    server.crash()
    loop.runUntilIdle()
  }

  @Test func aClientSeesTheResetOfACrashedServerAndRetriesAfterTheRestart() throws {
    let loop = CoroutineTestLoop(seed: 1)
    let network = CoSimulatedNetwork(on: loop)
    let server = network.addHost("server")
    let client = network.addHost("client")
    server.launch { try runEchoServer(port: 7) }

    let waiting = client.launch { () throws -> [UInt8] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      return try stream.read(upTo: 100)  // the server echoes nothing unasked
    }
    loop.advance(by: 1)
    server.crash()
    loop.advance(by: 1)
    #expect(throws: POSIXError(.ECONNRESET)) { try waiting.result?.get() }

    server.restart()
    server.launch { try runEchoServer(port: 7) }
    let again = client.launch { try askEcho("back", host: "server") }
    loop.advance(by: 1)
    #expect(try again.result?.get() == "back")
    // The test ends what it started: the crash cancels the server's coroutines.
    server.crash()
    loop.runUntilIdle()
  }
}

/// Echoes every connection on `port`, each in a coroutine of its own.
func runEchoServer(port: UInt16) throws {
  let listener = try CoTCPListener(port: port)
  defer { listener.close() }
  while true {
    let connection = try listener.accept()
    co_launch {
      defer { connection.close() }
      while case let bytes = try connection.read(upTo: 4096), !bytes.isEmpty {
        try connection.write(bytes)
      }
    }
  }
}

/// Sends `message` to the echo server on `host` and returns its answer.
func askEcho(_ message: String, host: String, timeout: Double? = nil) throws -> String {
  let stream = try CoTCPStream.connect(host: host, port: 7, timeout: timeout)
  defer { stream.close() }
  try stream.write(Array(message.utf8))
  var reply: [UInt8] = []
  while reply.count < message.utf8.count {
    let bytes = try stream.read(upTo: 4096, timeout: timeout)
    if bytes.isEmpty { break }
    reply += bytes
  }
  return String(decoding: reply, as: UTF8.self)
}
