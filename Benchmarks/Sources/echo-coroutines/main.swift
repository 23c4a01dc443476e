import Coroutines
import Foundation

// This library's echo server on one loop, the echo benchmark's subject:
// `echo-coroutines [--shared] [port]` (0 or none: the system picks), prints `port=N` once
// listening, runs until killed. One coroutine per connection, in plain blocking style: read
// what has arrived, write it back, until the peer closes. `--shared` runs the connections'
// coroutines on shared stacks instead of a stack each.

let arguments = CommandLine.arguments.dropFirst()
let stack: CoroutineStack.Mode = arguments.contains("--shared") ? .shared : .dedicated
let port = arguments.lazy.compactMap { UInt16($0) }.first ?? 0

/// Echoes `connection` until the peer closes it; a connection that fails is closed and ends.
func serve(_ connection: CoTCPStream) {
  defer { connection.close() }
  let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
  defer { buffer.deallocate() }
  do {
    while true {
      let count = try connection.read(into: buffer)
      if count == 0 { return }
      try connection.write(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
    }
  } catch {
    // The peer reset or vanished: nothing to do but close.
  }
}

try CoroutineLoop.run {
  let listener = try CoTCPListener(host: "127.0.0.1", port: port, backlog: 4096)
  print("port=\(listener.port)")
  fflush(nil)  // every stream: the benchmark waits for this line
  while true {
    let connection = try listener.accept()
    co_launch(stack: stack) { serve(connection) }
  }
}
