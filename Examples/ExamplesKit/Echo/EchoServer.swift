import Coroutines
import Foundation

/// This file's path, so the walkthrough can print and count the region below.
let echoServerSource = #filePath

// region: server
/// An echo server: one coroutine per connection, each a plain blocking-style loop. Returns once
/// the listener is closed. Out of descriptors, it waits before it accepts again (5 ms, doubling
/// up to 1 s, back to 5 ms after a success) while the connections it serves go on.
public func serveEcho(on listener: CoTCPListener) throws {
  var failures = 0  // accepts failed in a row
  while true {
    do {
      let connection = try listener.accept()
      failures = 0
      co_launch(detached: true) {
        defer { connection.close() }
        while case let bytes = try connection.read(upTo: 65536), !bytes.isEmpty {
          try connection.write(bytes)  // until a read returns [] (the client closed its side)
        }
      }
    } catch let error as POSIXError where error.code == .EMFILE || error.code == .ENFILE {
      failures += 1
      try co_delay(CoBackoff.exponential(initial: 0.005, maximum: 1).delay(afterFailure: failures))
    } catch let error as POSIXError where error.code == .EBADF {
      return  // the listener was closed
    }
  }
}
// endregion
