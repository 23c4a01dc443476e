import Foundation
import Synchronization

/// A TCP connection whose reads and writes suspend the calling coroutine, never its thread.
///
/// ```swift
/// let stream = try CoTCPStream.connect(host: "127.0.0.1", port: port, timeout: 5)
/// defer { stream.close() }
/// try stream.write(Array("ping".utf8))
/// let reply = try stream.read(upTo: 4096)   // [] once the peer has closed its side
/// ```
///
/// Each call tries its system call first and waits only when the kernel says it would block,
/// so a read of data that has already arrived costs one system call and no switch. The socket
/// is non-blocking and close-on-exec, with `TCP_NODELAY` on; writes never raise `SIGPIPE`.
///
/// One coroutine may read while another writes. Several coroutines may also read (or write) at
/// once; each read returns whatever bytes it finds, so they split the stream unpredictably.
///
/// Errors are Foundation's `POSIXError` with the system's code (`.ECONNREFUSED`,
/// `.ECONNRESET`, `.EPIPE`, …); ``close()``, from any coroutine or thread, ends the waits on
/// the stream with `POSIXError(.EBADF)`, which every later call throws too. A stream released
/// without `close()` closes its socket.
public final class CoTCPStream: Sendable {
  let descriptor: OwnedDescriptor
  /// The simulated transport of a stream made on a ``CoSimulatedHost``, else nil: chosen once,
  /// when the stream is made, so the kernel's path costs one predictable branch per call.
  let simulated: SimulatedEnd?
  /// True when the last read returned less than it asked for (the socket was empty then), and
  /// before the first read: the next read waits before it reads.
  private let drained = Atomic<Bool>(true)

  /// Takes ownership of the connected, non-blocking socket `fd`.
  init(adopting fd: Int32) {
    descriptor = OwnedDescriptor(fd)
    simulated = nil
  }

  /// Wraps one side of a simulated connection.
  init(simulated end: SimulatedEnd) {
    descriptor = OwnedDescriptor.none()
    simulated = end
  }

  /// Connects to `host`, an IPv4 or IPv6 literal or a name, on `port`. A name is resolved off
  /// the loop's thread; with several addresses, each is tried in the resolver's order until one
  /// connects, and the last one's error is thrown if none does.
  ///
  /// - Parameters:
  ///   - host: An IPv4 or IPv6 literal (`"127.0.0.1"`, `"::1"`) or a name (`"localhost"`).
  ///   - port: The port to connect to.
  ///   - timeout: Seconds for the whole call, the lookup and every attempt included; nil waits
  ///     as long as the system does.
  /// - Throws: `POSIXError` (`.ECONNREFUSED`, `.ENETUNREACH`, …), ``CoResolutionError`` for a
  ///   name that does not resolve, ``CoroutineError/timedOut``, `CancellationError`, and
  ///   ``CoroutineError/notInCoroutine`` outside a coroutine.
  public static func connect(host: String, port: UInt16, timeout: Double? = nil) throws
    -> CoTCPStream
  {
    let call: StaticString = "CoTCPStream.connect(host:port:timeout:)"
    guard Coroutine.current != nil else { throw CoroutineError.notInCoroutine }
    if let binding = SimulatedHostBinding.ofCurrentCoroutine {
      return CoTCPStream(
        simulated: try SimulatedEnd.connect(
          from: binding, to: host, port: port, timeout: timeout, call: call))
    }
    let deadline = CallDeadline(checkedTimeout(timeout, in: call))
    var lastError: any Error = POSIXError(.EADDRNOTAVAIL)
    for address in try resolveTCP(host: host, port: port, passive: false) {
      do {
        return try connect(to: address, deadline: deadline, call: call)
      } catch let error as POSIXError {
        lastError = error  // the next address may answer
      }
    }
    throw lastError
  }

  /// One attempt: a non-blocking connect, a wait for writable, then the socket's error.
  private static func connect(to address: SocketAddress, deadline: CallDeadline, call: StaticString)
    throws -> CoTCPStream
  {
    let fd = socket(
      address.family,
      Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw lastPOSIXError() }
    let stream = CoTCPStream(adopting: fd)
    // Closed on every way out but success, cancellation and timeout included.
    var connected = false
    defer { if !connected { stream.close() } }
    try setSocketOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    let result = address.withSockaddr { Glibc.connect(fd, $0, $1) }
    if result != 0 {
      guard errno == EINPROGRESS else { throw lastPOSIXError() }
      _ = try waitForDescriptor(
        fd, .writable, timeout: deadline.remaining, call: call, owner: stream.descriptor)
      var error: Int32 = 0
      var length = socklen_t(MemoryLayout<Int32>.size)
      if getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { throw lastPOSIXError() }
      if error != 0 { throw POSIXError(POSIXErrorCode(rawValue: error) ?? .ECONNREFUSED) }
    }
    connected = true
    return stream
  }

  /// Reads up to `maxBytes` bytes, waiting until at least one byte arrives; returns `[]` at the
  /// end of the stream (the peer closed or shut down its side), and for a `maxBytes` of zero.
  ///
  /// A read returns what has arrived, at most 64 KiB at a time, in an array of exactly that
  /// size: its cost depends on the bytes it returns, not on `maxBytes`, so `.max` is fine.
  ///
  /// - Parameters:
  ///   - maxBytes: The most bytes to return; negative stops the program with a message.
  ///   - timeout: Seconds to wait at most; past it ``CoroutineError/timedOut`` is thrown and the
  ///     stream stays usable.
  public func read(upTo maxBytes: Int, timeout: Double? = nil) throws -> [UInt8] {
    let call: StaticString = "CoTCPStream.read(upTo:timeout:)"
    coPrecondition(maxBytes >= 0, "\(call): maxBytes \(maxBytes) is negative")
    if let simulated { return try simulated.read(upTo: maxBytes, timeout: timeout, call: call) }
    let deadline = CallDeadline(checkedTimeout(timeout, in: call))
    if maxBytes == 0 { return [] }
    let limit = min(maxBytes, Poller.readBufferSize)
    return try descriptor.use { fd in
      // Waits before any buffer is touched: an idle connection holds none.
      try waitIfDrained(fd, deadline, call)
      while true {
        let (count, bytes) = receive(fd, upTo: limit)
        if count >= 0 {
          // A read that returned less than it could took everything there was.
          drained.store(count > 0 && count < limit, ordering: .relaxed)
          return bytes
        }
        try waitAfterFailedReceive(fd, deadline, call)
      }
    }
  }

  /// One `recv` of up to `limit` bytes (at most ``Poller/readBufferSize``): its result, and
  /// the bytes that arrived. On a loop's thread it receives into the loop's read buffer and
  /// copies out what arrived, so that a large `limit` costs nothing when a few bytes come;
  /// elsewhere into an array of `limit` bytes, not zeroed.
  private func receive(_ fd: Int32, upTo limit: Int) -> (Int, [UInt8]) {
    if let loop = CoroutineLoop.currentUnretained {
      return loop._withUnsafeGuaranteedRef { loop in
        let buffer = loop.poller.readBuffer
        let count = recv(fd, buffer.baseAddress, limit, 0)
        guard count > 0 else { return (count, []) }
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { copy, initialized in
          copy.baseAddress!.initialize(
            from: buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count)
          initialized = count
        }
        return (count, bytes)
      }
    }
    var count = 0
    let bytes = [UInt8](unsafeUninitializedCapacity: limit) { buffer, initialized in
      count = recv(fd, buffer.baseAddress, limit, 0)
      initialized = max(count, 0)
    }
    return (count, bytes)
  }

  /// Reads into `buffer`, waiting until at least one byte arrives; returns how many bytes were
  /// read, 0 at the end of the stream (or for an empty buffer).
  ///
  /// - Parameters:
  ///   - buffer: Where the bytes go; its start is filled.
  ///   - timeout: As for ``read(upTo:timeout:)``.
  public func read(into buffer: UnsafeMutableRawBufferPointer, timeout: Double? = nil) throws
    -> Int
  {
    let call: StaticString = "CoTCPStream.read(into:timeout:)"
    if let simulated { return try simulated.read(into: buffer, timeout: timeout, call: call) }
    let deadline = CallDeadline(checkedTimeout(timeout, in: call))
    if buffer.isEmpty { return 0 }
    return try descriptor.use { fd in
      try waitIfDrained(fd, deadline, call)
      return try receive(fd, into: buffer, deadline, call)
    }
  }

  /// Waits for the socket to become readable if the last read emptied it: this read would
  /// most likely find nothing. The descriptor's registration is edge-triggered and remembers
  /// edges nobody waited for, so data that came meanwhile ends the wait at once, without a system
  /// call. Outside a coroutine it does not wait (the read then waits only if it must).
  private func waitIfDrained(_ fd: Int32, _ deadline: CallDeadline, _ call: StaticString) throws {
    guard drained.load(ordering: .relaxed), Coroutine.current != nil else { return }
    _ = try waitForDescriptor(
      fd, .readable, timeout: deadline.remaining, call: call, owner: descriptor)
  }

  /// Reads what is there into `buffer`, waiting whenever the socket has nothing.
  private func receive(
    _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, _ deadline: CallDeadline,
    _ call: StaticString
  ) throws -> Int {
    while true {
      let count = recv(fd, buffer.baseAddress, buffer.count, 0)
      if count >= 0 {
        // A read that returned less than it could took everything there was.
        drained.store(count > 0 && count < buffer.count, ordering: .relaxed)
        return count
      }
      try waitAfterFailedReceive(fd, deadline, call)
    }
  }

  /// After a `recv` that failed: waits for the socket if it had nothing, returns at once for
  /// a signal, throws the system's error otherwise.
  private func waitAfterFailedReceive(
    _ fd: Int32, _ deadline: CallDeadline, _ call: StaticString
  ) throws {
    switch errno {
    case EAGAIN, EWOULDBLOCK:
      _ = try waitForDescriptor(
        fd, .readable, timeout: deadline.remaining, call: call, owner: descriptor)
    case EINTR: return
    default: throw lastPOSIXError()
    }
  }

  /// Writes all of `bytes`, waiting whenever the socket's buffer is full.
  ///
  /// - Parameters:
  ///   - bytes: What to send.
  ///   - timeout: Seconds for the whole write; past it ``CoroutineError/timedOut`` is thrown.
  ///     Bytes the kernel took before that are sent; the stream stays usable.
  /// - Throws: `POSIXError(.EPIPE)` or `(.ECONNRESET)` when the peer is gone (never `SIGPIPE`).
  public func write(_ bytes: [UInt8], timeout: Double? = nil) throws {
    let call: StaticString = "CoTCPStream.write(_:timeout:)"
    // The array itself, not a copy, is what a simulated connection carries.
    if let simulated { return try simulated.write(bytes, timeout: timeout, call: call) }
    try bytes.withUnsafeBytes { try send($0, timeout: timeout, call: call) }
  }

  /// Writes all of `bytes`, as ``write(_:timeout:)-([UInt8],_)`` does, from memory you own.
  ///
  /// - Parameters:
  ///   - bytes: What to send; read only during the call.
  ///   - timeout: As for ``write(_:timeout:)-([UInt8],_)``.
  public func write(_ bytes: UnsafeRawBufferPointer, timeout: Double? = nil) throws {
    let call: StaticString = "CoTCPStream.write(_:timeout:)"
    if let simulated { return try simulated.write([UInt8](bytes), timeout: timeout, call: call) }
    try send(bytes, timeout: timeout, call: call)
  }

  private func send(_ bytes: UnsafeRawBufferPointer, timeout: Double?, call: StaticString) throws {
    let deadline = CallDeadline(checkedTimeout(timeout, in: call))
    try descriptor.use { fd in
      var sent = 0
      while sent < bytes.count {
        let count = Glibc.send(
          fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
        if count >= 0 {
          sent += count
          continue
        }
        switch errno {
        case EAGAIN, EWOULDBLOCK:
          _ = try waitForDescriptor(
            fd, .writable, timeout: deadline.remaining, call: call, owner: descriptor)
        case EINTR: continue
        default: throw lastPOSIXError()
        }
      }
    }
  }

  /// Shuts down the sending side: the peer reads the end of the stream once it has read what
  /// was sent; reading from this side goes on. Does nothing on a closed stream.
  public func shutdownWrite() {
    if let simulated { return simulated.shutdownWrite() }
    _ = try? descriptor.use { Glibc.shutdown($0, Int32(SHUT_WR)) }
  }

  /// Closes the stream: waits on it end with `POSIXError(.EBADF)`, later calls throw it, and
  /// the socket is closed as soon as no call is using it. Calling it again does nothing.
  public func close() {
    if let simulated { return simulated.close() }
    descriptor.close()
  }
}
