import Coroutines
import Foundation

// This library's echo server on one loop, the echo benchmark's subject:
// `echo-coroutines [--shared] [--mapped-buffers] [port]` (0 or none: the system picks), prints
// `port=N` once listening, runs until killed. One coroutine per connection, in plain blocking
// style: read what has arrived into the connection's 4 KiB buffer, write it back, until the
// peer closes. `--shared` runs the connections' coroutines on shared stacks instead of a stack
// each. `--mapped-buffers` maps each buffer as a page of its own instead of taking it from
// malloc, whose chunk headers make every buffer's page resident at once: a mapped page is only
// committed when the first request is written into it, as Go's fresh heap memory is.

let arguments = CommandLine.arguments.dropFirst()
let stack: CoroutineStack.Mode = arguments.contains("--shared") ? .shared : .dedicated
let mappedBuffers = arguments.contains("--mapped-buffers")
let port = arguments.lazy.compactMap { UInt16($0) }.first ?? 0
let bufferSize = 4096

/// Echoes `connection` until the peer closes it; a connection that fails is closed and ends.
func serve(_ connection: CoTCPStream) {
  defer { connection.close() }
  guard let buffer = allocateBuffer() else { return }
  defer { deallocateBuffer(buffer) }
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

func allocateBuffer() -> UnsafeMutableRawBufferPointer? {
  guard mappedBuffers else {
    return UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
  }
  let page = mmap(nil, bufferSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
  guard let page, page != MAP_FAILED else { return nil }
  return UnsafeMutableRawBufferPointer(start: page, count: bufferSize)
}

func deallocateBuffer(_ buffer: UnsafeMutableRawBufferPointer) {
  if mappedBuffers {
    munmap(buffer.baseAddress, bufferSize)
  } else {
    buffer.deallocate()
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
