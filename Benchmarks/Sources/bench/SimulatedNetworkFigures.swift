import Coroutines
import Foundation

/// The simulated network's speed: 1 000 connections echoing through the same server and client
/// code, once on a simulated network on a test loop (virtual time, 1 ms latency) and once on
/// real loopback on a `CoroutineLoop`, in the same child process. The figure is messages per
/// wall-clock second; the goal is at least ten times loopback's. `bench simnet` prints this row
/// alone.
enum SimulatedNetworkFigures {
  static let figure = "simnet-echo"
  static let connections = 1_000
  static let messagesPerConnection = 50
  static let rounds = 3

  static func measure(_ figure: String) throws -> [Double]? {
    guard figure == Self.figure else { return nil }
    var simulated = 0.0
    var loopback = 0.0
    // Taking turns, the best of each: the host is shared.
    for _ in 0..<rounds {
      simulated = max(simulated, try simulatedMessagesPerSecond())
      loopback = max(loopback, try loopbackMessagesPerSecond())
    }
    return [simulated, loopback]
  }

  static func row(_ numbers: [Double]) -> Row {
    Row(
      figure: "simulated network: 1 000 connections echoing, messages per wall-clock second",
      ours: numbers[0], unit: "msg/s", baseline: "the same code on real loopback",
      baselineValue: numbers[1], target: 10, atLeast: true)
  }

  /// `bench simnet`: this row alone.
  static func runSectionIfRequested() throws -> Bool {
    guard CommandLine.arguments.dropFirst().first == "simnet" else { return false }
    try printSection()
    return true
  }

  static func printSection() throws {
    FileHandle.standardError.write("… simulated network echo\n".data(using: .utf8)!)
    let numbers = try Child.measure(figure, on: CoroutineBackend.current)
    print("")
    print("Simulated network (\(CoroutineBackend.current) backend, one thread each):")
    print("")
    printTable([row(numbers)])
  }

  // MARK: The code under test, the same on both networks

  /// Echoes every connection `listener` accepts, each in a child coroutine.
  static func serve(_ listener: CoTCPListener) throws {
    while true {
      let connection = try listener.accept()
      co_launch {
        defer { connection.close() }
        while true {
          let bytes = try connection.read(upTo: 4096)
          if bytes.isEmpty { return }
          try connection.write(bytes)
        }
      }
    }
  }

  /// Sends `messagesPerConnection` messages of 16 bytes, each after the echo of the last.
  static func client(host: String, port: UInt16) throws {
    let stream = try CoTCPStream.connect(host: host, port: port)
    defer { stream.close() }
    let message = [UInt8](repeating: 7, count: 16)
    for _ in 0..<messagesPerConnection {
      try stream.write(message)
      var received = 0
      while received < message.count {
        let bytes = try stream.read(upTo: 4096)
        if bytes.isEmpty { throw POSIXError(.ECONNRESET) }
        received += bytes.count
      }
    }
  }

  // MARK: The two networks

  static func simulatedMessagesPerSecond() throws -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    let loop = CoroutineTestLoop(seed: 1)
    let network = CoSimulatedNetwork(on: loop)
    let server = network.addHost("server")
    let clients = network.addHost("clients")
    let serving = server.launch { try? serve(CoTCPListener(port: 7)) }
    let tasks = (0..<connections).map { _ in
      clients.launch { try client(host: "server", port: 7) }
    }
    while tasks.contains(where: { !$0.isSettled }) { loop.advance(by: 1) }
    serving.cancel()
    loop.advance(by: 1)
    for task in tasks { try task.result?.get() }
    return rate(since: start)
  }

  static func loopbackMessagesPerSecond() throws -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try CoroutineLoop.run {
      let listener = try CoTCPListener(port: 0)
      let port = listener.port
      let serving = co_launch(detached: true) { try? serve(listener) }
      let tasks = (0..<connections).map { _ in
        co_launch { try client(host: "127.0.0.1", port: port) }
      }
      for task in tasks { try co_await(task) }
      listener.close()
      serving.cancel()
    }
    return rate(since: start)
  }

  private static func rate(since start: UInt64) -> Double {
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    return Double(connections * messagesPerConnection) / seconds
  }
}
