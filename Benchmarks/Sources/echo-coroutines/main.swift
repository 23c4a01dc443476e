import Coroutines
import Foundation

// This library's echo server on one loop, the echo benchmark's subject:
// `echo-coroutines [--shared] [--own-buffer] [--loops N] [port]` (0 or none: the system
// picks), prints `port=N` once listening, runs until killed. `--loops N` serves on a
// `CoroutineLoopGroup` of N loops instead, with a listener per loop on the same port. One coroutine per connection, in plain blocking
// style: read what has arrived, write it back, until the peer closes. `--shared` runs the
// connections' coroutines on shared stacks instead of a stack each. By default each read
// returns a fresh array of what arrived (`read(upTo: 65536)`, as servers usually ask: the
// read's cost does not depend on the limit, and it allocates only once data has arrived, so
// an idle connection holds no buffer); `--own-buffer` reads into a 4 KiB buffer that the connection
// keeps for its life (`read(into:)`) instead.

let arguments = CommandLine.arguments.dropFirst()
let stack: CoroutineStack.Mode = arguments.contains("--shared") ? .shared : .dedicated
let ownBuffer = arguments.contains("--own-buffer")
let loops = arguments.firstIndex(of: "--loops").map { Int(arguments[$0 + 1])! }
let port =
  arguments.enumerated().lazy
  .filter { $0.offset == 0 || arguments[arguments.startIndex + $0.offset - 1] != "--loops" }
  .compactMap { UInt16($0.element) }.first ?? 0

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
        let bytes = try connection.read(upTo: 65536)
        if bytes.isEmpty { return }
        try connection.write(bytes)
      }
    }
  } catch {
    // The peer reset or vanished: nothing to do but close.
  }
}

/// Accepts connections until the process is killed, each served by a coroutine launched on
/// `scheduler` (the accepting loop's, or its group's).
func acceptForever(_ listener: CoTCPListener, launchingOn scheduler: (any CoroutineScheduler)?)
  throws
{
  while true {
    let connection = try listener.accept()
    co_launch(on: scheduler, stack: stack) { serve(connection) }
  }
}

if let loops {
  let group = CoroutineLoopGroup(threads: loops)
  let first = try CoTCPListener(host: "127.0.0.1", port: port, backlog: 4096, reusePort: true)
  let listeners =
    [first]
    + (try (1..<loops).map { _ in
      try CoTCPListener(host: "127.0.0.1", port: first.port, backlog: 4096, reusePort: true)
    })
  for (loop, listener) in zip(group.loops, listeners) {
    co_launch(on: loop) { try acceptForever(listener, launchingOn: group) }
  }
  print("port=\(first.port)")
  fflush(nil)
  while true { sleep(3600) }
}

try CoroutineLoop.run {
  let listener = try CoTCPListener(host: "127.0.0.1", port: port, backlog: 4096)
  print("port=\(listener.port)")
  fflush(nil)  // every stream: the benchmark waits for this line
  try acceptForever(listener, launchingOn: nil)
}
