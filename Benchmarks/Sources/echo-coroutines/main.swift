import Coroutines
import Foundation

// This library's echo server on one loop, the echo benchmark's subject:
// `echo-coroutines [--shared] [--own-buffer] [port]` (0 or none: the system picks), prints
// `port=N` once listening, runs until killed. One coroutine per connection, in plain blocking
// style: read what has arrived, write it back, until the peer closes. `--shared` runs the
// connections' coroutines on shared stacks instead of a stack each. By default each read
// returns a fresh array (`read(upTo:)`, which allocates only once data has arrived, so an idle
// connection holds no buffer); `--own-buffer` reads into a 4 KiB buffer that the connection
// keeps for its life (`read(into:)`) instead.

let arguments = CommandLine.arguments.dropFirst()
let stack: CoroutineStack.Mode = arguments.contains("--shared") ? .shared : .dedicated
let ownBuffer = arguments.contains("--own-buffer")
let port = arguments.lazy.compactMap { UInt16($0) }.first ?? 0

/// Echoes `connection` until the peer closes it; a connection that fails is closed and ends.
func serve(_ connection: CoTCPStream) {
  defer { connection.close() }
  do {
    if ownBuffer {
      let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
      defer { buffer.deallocate() }
      while true {
        let count = try connection.read(into: buffer)
        if count == 0 { return }
        try connection.write(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
      }
    } else {
      while true {
        let bytes = try connection.read(upTo: 4096)
        if bytes.isEmpty { return }
        try connection.write(bytes)
      }
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
