import CLinux
import Foundation
import Synchronization

/// A listening TCP socket whose ``accept(timeout:)`` suspends the calling coroutine, never its
/// thread.
///
/// ```swift
/// let listener = try CoTCPListener(port: 0)     // 127.0.0.1, a free port
/// print("listening on", listener.port)
/// while true {
///   let connection = try listener.accept()
///   co_launch { try serve(connection) }
/// }
/// ```
///
/// The socket has `SO_REUSEADDR` on (a restarted server binds at once) and `SO_REUSEPORT`
/// only when asked, so that several listeners, one per loop, share a port. ``close()`` from any
/// coroutine or thread ends a waiting `accept` with `POSIXError(.EBADF)`; a listener released
/// without `close()` closes its socket.
public final class CoTCPListener: Sendable {
  let descriptor: OwnedDescriptor
  /// The simulated transport of a listener made on a ``CoSimulatedHost``, else nil (see
  /// ``CoTCPStream``).
  let simulated: SimulatedListener?
  /// The port the listener is bound to; the one the system picked when created with port 0.
  public let port: UInt16
  /// How many of the next accepts fail with `EMFILE` as if the process were out of descriptors
  /// (for tests: the limit is the whole process's, and tests run in parallel).
  let failingAcceptsForTesting = Atomic<Int>(0)

  /// Binds to `host` (an IPv4 or IPv6 literal or a name; the first address it resolves to) on
  /// `port`, and listens. Port 0 asks the system for a free one.
  ///
  /// Inside a coroutine, a name is resolved off the loop's thread; outside one, on the calling
  /// thread.
  ///
  /// - Parameters:
  ///   - host: The address to listen on: `"127.0.0.1"` (the default) for this machine only,
  ///   `"0.0.0.0"` or `"::"` for every interface, or a name.
  ///   - port: The port; 0 asks the system for a free one (read it back from ``port``).
  ///   - backlog: How many connections may wait to be accepted; negative stops the program
  ///     with a message.
  ///   - reusePort: Sets `SO_REUSEPORT`, so that several listeners (one per loop) share the port.
  /// - Throws: `POSIXError` (`.EADDRINUSE` for a port taken, `.EADDRNOTAVAIL` for an address
  ///   not of this machine, `.EACCES` for a privileged port), ``CoResolutionError``.
  public init(
    host: String = "127.0.0.1", port: UInt16 = 0, backlog: Int32 = 1024, reusePort: Bool = false
  ) throws {
    coPrecondition(
      backlog >= 0,
      "CoTCPListener.init(host:port:backlog:reusePort:): backlog \(backlog) is negative")
    if let binding = SimulatedHostBinding.ofCurrentCoroutine {
      // On a simulated host the listener listens on that host, whatever address it names.
      let simulated = try SimulatedListener(on: binding, port: port)
      self.simulated = simulated
      self.port = simulated.port
      descriptor = OwnedDescriptor.none()
      return
    }
    simulated = nil
    let address = try resolveTCP(host: host, port: port, passive: true)[0]
    let fd = socket(
      address.family,
      Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw lastPOSIXError() }
    let descriptor = OwnedDescriptor(fd)  // closes the socket if anything below throws
    try setSocketOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
    if reusePort { try setSocketOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
    if address.withSockaddr({ bind(fd, $0, $1) }) != 0 { throw lastPOSIXError() }
    if listen(fd, backlog) != 0 { throw lastPOSIXError() }
    self.port = try SocketAddress.local(of: fd).port
    self.descriptor = descriptor
  }

  /// Waits for the next connection and returns it as a stream (non-blocking, close-on-exec,
  /// `TCP_NODELAY` on).
  ///
  /// Out of descriptors, the call throws `POSIXError(.EMFILE)` at once and the connection
  /// stays in the backlog; the listener stays usable. Calling again at once would fail again
  /// until a descriptor is closed: wait a little first (see "Running out of descriptors" in
  /// the Networking article).
  ///
  /// - Parameter timeout: Seconds to wait at most; past it ``CoroutineError/timedOut`` is
  ///   thrown and the listener stays usable.
  /// - Throws: `POSIXError` (`.EBADF` once closed, `.EMFILE` out of descriptors, …),
  ///   ``CoroutineError/timedOut``, `CancellationError`, ``CoroutineError/notInCoroutine``
  ///   outside a coroutine (unless a connection is already waiting).
  public func accept(timeout: Double? = nil) throws -> CoTCPStream {
    let call: StaticString = "CoTCPListener.accept(timeout:)"
    if let simulated { return try simulated.accept(timeout: timeout, call: call) }
    let timeout = checkedTimeout(timeout, in: call)
    return try descriptor.use { fd in
      while true {
        var connection: Int32
        if failingAcceptsForTesting.load(ordering: .relaxed) > 0 {
          failingAcceptsForTesting.subtract(1, ordering: .relaxed)
          (connection, errno) = (-1, EMFILE)
        } else {
          connection = clinux_accept4(
            fd, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
        }
        if connection >= 0 {
          let stream = CoTCPStream(adopting: connection)
          try setSocketOption(connection, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
          return stream
        }
        switch errno {
        case EAGAIN, EWOULDBLOCK:
          _ = try waitForDescriptor(fd, .readable, timeout: timeout, call: call, owner: descriptor)
        // A connection reset before it was taken, or a signal: the next one may be fine.
        case EINTR, ECONNABORTED: continue
        default: throw lastPOSIXError()
        }
      }
    }
  }

  /// Stops listening: a waiting ``accept(timeout:)`` throws `POSIXError(.EBADF)`, as every later
  /// call does, and the socket is closed as soon as no call is using it. Calling it again does
  /// nothing.
  public func close() {
    if let simulated { return simulated.close() }
    descriptor.close()
  }
}
