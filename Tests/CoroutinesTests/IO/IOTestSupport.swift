import Foundation
import Testing

@testable import Coroutines

/// The descriptors this process has open now, each as its number and what it names
/// (`socket:[1234]`, `pipe:[5678]`, `anon_inode:[eventpoll]`, a path).
func openDescriptors() -> Set<String> {
  let numbers = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
  var open: Set<String> = []
  for number in numbers {
    var target = [CChar](repeating: 0, count: 4096)
    let count = readlink("/proc/self/fd/\(number)", &target, target.count - 1)
    // The listing's own descriptor is closed by now, and fails here.
    guard count >= 0 else { continue }
    open.insert(
      number + " " + String(decoding: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    )
  }
  return open
}

/// Runs `body` and checks that it left no descriptor open that was not open before it. The I/O
/// suites run one test at a time (see the Makefile), but a descriptor of an earlier test may
/// still close meanwhile (a loop's, released by a Dispatch thread a moment after the callback
/// that held it returned; much later under ThreadSanitizer): that one was open before, so
/// counting what is new, rather than comparing counts, does not depend on another test's timing.
func expectNoDescriptorLeaked(
  sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) rethrows {
  // The shared poller lives from its first use to the end of the process: its descriptors are
  // open before whichever test uses it first, so that test passes alone as in the whole suite.
  _ = CoroutineLoop.sharedPoller
  let before = openDescriptors()
  try body()
  // This test's own loops close their descriptors as the last reference to each goes, which
  // may also be a Dispatch thread's.
  let end = Date().addingTimeInterval(2)
  var leaked = openDescriptors().subtracting(before)
  while !leaked.isEmpty, Date() < end {
    usleep(1000)
    leaked = openDescriptors().subtracting(before)
  }
  #expect(leaked.isEmpty, "descriptors leaked: \(leaked.sorted())", sourceLocation: sourceLocation)
}

/// A loop that runs `body` in a coroutine, checking that no descriptor is left open afterwards.
@discardableResult
func runOnLoopLeavingNoDescriptor<T>(
  sourceLocation: SourceLocation = #_sourceLocation, _ body: @escaping () throws -> T
) throws -> T {
  var result: T?
  try expectNoDescriptorLeaked(sourceLocation: sourceLocation) {
    result = try CoroutineLoop.run(body)
  }
  return result!
}

/// A pipe whose ends are non-blocking and close-on-exec; closes both on `close()`.
final class TestPipe: Sendable {
  let readEnd: Int32
  let writeEnd: Int32

  init() throws {
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
    for end in ends {
      _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
      _ = fcntl(end, F_SETFD, FD_CLOEXEC)
    }
    readEnd = ends[0]
    writeEnd = ends[1]
  }

  func close() {
    Glibc.close(readEnd)
    Glibc.close(writeEnd)
  }
}

/// Bytes that differ from position to position, so that a byte out of place is noticed: a
/// block of a prime length (never a multiple of a buffer's size) repeated, which is quick to
/// build even in a debug build.
func patternBytes(_ count: Int, seed: Int = 0) -> [UInt8] {
  let block = (0..<4093).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ $0 >> 8) }
  var bytes: [UInt8] = []
  bytes.reserveCapacity(count + block.count)
  while bytes.count < count { bytes += block }
  bytes.removeLast(bytes.count - count)
  return bytes
}

/// True when both hold the same bytes (memcmp: `==` on arrays is slow in a debug build).
func sameBytes(_ first: [UInt8], _ second: [UInt8]) -> Bool {
  first.count == second.count
    && first.withUnsafeBytes { a in
      second.withUnsafeBytes { b in
        a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
      }
    }
}

extension CoTCPStream {
  /// Reads exactly `count` bytes, or fewer if the stream ends first; each read asks for up to
  /// `chunk` bytes (by default, what is still missing).
  func read(exactly count: Int, timeout: Double? = nil, chunk: Int? = nil) throws -> [UInt8] {
    var received: [UInt8] = []
    while received.count < count {
      let chunk = try read(upTo: chunk ?? (count - received.count), timeout: timeout)
      if chunk.isEmpty { break }
      received += chunk
    }
    return received
  }

  /// Reads until the end of the stream.
  func readToEnd() throws -> [UInt8] {
    var received: [UInt8] = []
    while true {
      let chunk = try read(upTo: 65536)
      if chunk.isEmpty { return received }
      received += chunk
    }
  }
}

/// A listener on 127.0.0.1 whose accepted connections are each served by `serve` in a
/// coroutine of their own, until the listener is closed.
func startServer(
  _ listener: CoTCPListener, _ serve: @escaping @Sendable (CoTCPStream) throws -> Void
) -> CoTask<Void> {
  co_launch(detached: true) {
    while true {
      let connection: CoTCPStream
      do {
        connection = try listener.accept()
      } catch let error as POSIXError where error.code == .EBADF {
        return  // closed: the server's work is done
      }
      co_launch(detached: true) {
        defer { connection.close() }
        try serve(connection)
      }
    }
  }
}

/// A connection over loopback, from inside a coroutine: the client's stream and the one its
/// listener accepted. The listener is closed before this returns; the caller closes both
/// streams.
func connectedStreams() throws -> (client: CoTCPStream, accepted: CoTCPStream) {
  let listener = try CoTCPListener()
  defer { listener.close() }
  let server = co_launch { () -> CoTCPStream in try listener.accept() }
  let client = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
  return (client, try server.await())
}

/// Echoes what it reads until the end of the stream.
func echo(_ connection: CoTCPStream) throws {
  var buffer = [UInt8](repeating: 0, count: 16384)
  while true {
    let count = try buffer.withUnsafeMutableBytes { try connection.read(into: $0) }
    if count == 0 { return }
    try buffer.withUnsafeBytes {
      try connection.write(UnsafeRawBufferPointer(rebasing: $0[..<count]))
    }
  }
}

extension CoFuture {
  /// Blocks the calling test thread until the future settles, for at most `seconds`; its result,
  /// or nil if it did not settle in time.
  func blockingResult(seconds: Double) -> Result<T, any Error>? {
    let settled = DispatchSemaphore(value: 0)
    whenComplete { _ in settled.signal() }
    _ = settled.wait(timeout: .now() + seconds)
    return result
  }
}

extension CoroutineTestLoop {
  /// Runs ready jobs until `future` settles, letting other threads (the shared poller) hand
  /// coroutines back meanwhile; at most `seconds` of real time.
  func runUntilSettled<T>(_ future: CoFuture<T>, seconds: Double) -> Result<T, any Error>? {
    let end = Date().addingTimeInterval(seconds)
    while future.result == nil, Date() < end {
      runUntilIdle()
      if future.result == nil { usleep(200) }
    }
    return future.result
  }
}
