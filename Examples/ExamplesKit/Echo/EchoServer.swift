import Coroutines
import Foundation

/// This file's path, so the walkthrough can print and count the region below.
let echoServerSource = #filePath

// region: server
/// An echo server: one coroutine per connection, each a plain blocking-style loop. Returns once
/// the listener is closed.
public func serveEcho(on listener: CoTCPListener) throws {
  while true {
    let connection: CoTCPStream
    do {
      connection = try listener.accept()
    } catch let error as POSIXError where error.code == .EBADF {
      return  // the listener was closed
    }
    co_launch(detached: true) {
      defer { connection.close() }
      while true {
        let bytes = try connection.read(upTo: 4096)
        if bytes.isEmpty { return }  // the client closed its side
        try connection.write(bytes)
      }
    }
  }
}
// endregion
