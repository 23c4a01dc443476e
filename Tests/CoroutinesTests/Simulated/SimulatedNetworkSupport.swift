import Foundation
import Testing

@testable import Coroutines

/// A test loop with a simulated network of a `server` and a `client` host.
struct SimulatedPair {
  let loop: CoroutineTestLoop
  let network: CoSimulatedNetwork
  let server: CoSimulatedHost
  let client: CoSimulatedHost

  init(seed: UInt64? = nil) {
    loop = CoroutineTestLoop(seed: seed)
    network = CoSimulatedNetwork(on: loop)
    server = network.addHost("server")
    client = network.addHost("client")
  }

  /// Ends every coroutine of both hosts (a crash cancels them, and their `defer`s run), so that
  /// none outlives the test: the suite's leak check counts live coroutines at exit.
  func finish() {
    server.crash()
    client.crash()
    loop.runUntilIdle()
  }

  /// Starts an echo server on `server`'s `port`: each connection in a child coroutine, which
  /// writes back what it reads until the end of the stream.
  @discardableResult
  func startEchoServer(port: UInt16 = 7) -> CoTask<Void> {
    server.launch(name: "echo server") {
      let listener = try CoTCPListener(port: port)
      defer { listener.close() }
      while true {
        let connection = try listener.accept()
        co_launch(name: "echo") {
          defer { connection.close() }
          while true {
            let bytes = try connection.read(upTo: 4096)
            if bytes.isEmpty { return }
            try connection.write(bytes)
          }
        }
      }
    }
  }
}

/// The POSIX error code a task failed with, if it failed with one.
func posixCode<T>(_ task: CoTask<T>) -> POSIXErrorCode? {
  guard case .failure(let error as POSIXError)? = task.result else { return nil }
  return error.code
}
