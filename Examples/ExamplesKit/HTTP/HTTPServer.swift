import Coroutines
import Foundation
import Synchronization

/// This file's path, so the walkthrough can print the region below.
let httpServerSource = #filePath

/// How the HTTP server runs: the `examples http` options.
public struct HTTPServerConfiguration: Sendable, Equatable {
  /// The port on 127.0.0.1; 0 picks a free one.
  public var port: UInt16 = 0
  /// Loops serving connections: 1 serves on the calling thread's loop, more on a
  /// `CoroutineLoopGroup` of that many loops, each with a listener of its own on the port.
  public var threads = 1
  /// Seconds a kept-alive connection may wait for its next request before it is closed.
  public var idleTimeout = 5.0
  /// Seconds a client has to send a whole request head, from the connection's start or from
  /// the first byte of a later request; past it the connection is closed (slowloris).
  public var headerTimeout = 10.0

  /// The defaults: a free port, one thread, 5 s idle, 10 s for a head.
  public init() {}

  /// The most bytes a request head (request line and headers) may take: past it, 431.
  public static let headLimit = 8192
}

/// What the server did, counted when it stops.
public struct HTTPServerSummary: Sendable, Equatable {
  /// Requests answered, errors included.
  public var requests = 0
  /// Connections accepted.
  public var connections = 0
  /// Requests refused (400, 431, 501, 505), connections closed mid-request by the header
  /// timeout, and connections that failed otherwise than by the client leaving (a reset).
  public var errors = 0

  /// The one line the server prints as it exits.
  public var line: String {
    func counted(_ count: Int, _ noun: String) -> String {
      "\(count) \(noun)\(count == 1 ? "" : "s")"
    }
    return "served \(counted(requests, "request")) on \(counted(connections, "connection")), "
      + counted(errors, "error")
  }
}

/// An HTTP/1.1 server written as a user of the library writes one: a coroutine per connection
/// that reads, parses and answers in a plain loop. `GET /` is answered `Hello, World!`.
///
/// Timeouts are deadlines that each connection writes into its slot and one sweeping coroutine
/// enforces, closing the connections whose deadline has passed: a request costs a clock read
/// and a store, not a timer armed and cancelled per read (nginx and Go's netpoller also keep
/// deadlines apart from the reads).
public final class HTTPServer: Sendable {
  /// The options it runs with.
  public let configuration: HTTPServerConfiguration
  /// The port it listens on, the one picked when the configuration asked for 0.
  public let port: UInt16
  private let listeners: [CoTCPListener]
  /// The listeners, for tests that make their accepts fail.
  var listenersForTesting: [CoTCPListener] { listeners }
  private let responses = HTTPResponses()
  private let stopping = Atomic<Bool>(false)
  private let open = Locked<[ObjectIdentifier: ConnectionSlot]>([:])
  private let requests = Atomic<Int>(0)
  private let accepted = Atomic<Int>(0)
  private let errors = Atomic<Int>(0)

  /// Binds the listeners (one per thread, sharing the port) on 127.0.0.1.
  ///
  /// - Throws: `POSIXError` (`.EADDRINUSE` for a port taken, ...); ``HTTPCommand/UsageError``
  ///   for fewer than one thread or a timeout that is not a positive number of seconds.
  public init(_ configuration: HTTPServerConfiguration) throws {
    guard configuration.threads >= 1 else {
      throw HTTPCommand.UsageError("threads must be at least 1, not \(configuration.threads)")
    }
    for timeout in [configuration.idleTimeout, configuration.headerTimeout]
    where !(timeout > 0 && timeout.isFinite) {
      throw HTTPCommand.UsageError("a timeout must be a positive number of seconds, not \(timeout)")
    }
    self.configuration = configuration
    let reusePort = configuration.threads > 1
    let first = try CoTCPListener(
      host: "127.0.0.1", port: configuration.port, reusePort: reusePort)
    var listeners = [first]
    for _ in 1..<configuration.threads {
      listeners.append(try CoTCPListener(host: "127.0.0.1", port: first.port, reusePort: true))
    }
    self.listeners = listeners
    port = first.port
  }

  /// Serves until ``stop()``, then lets the requests in flight finish and returns what it did.
  /// Call it from a coroutine: with one thread it serves on that coroutine's loop, with more on
  /// `group`'s loops (one listener each).
  public func serve(on group: CoroutineLoopGroup? = nil) throws -> HTTPServerSummary {
    let running = CoWaitGroup()
    var acceptors: [CoTask<Void>] = []
    for (index, listener) in listeners.enumerated() {
      let loop = group.map { $0.loops[index % $0.loops.count] }
      acceptors.append(
        co_launch(on: loop, detached: true) { self.accept(on: listener, running) })
    }
    let sweeper = co_launch(detached: true) { try self.sweep() }
    for acceptor in acceptors { try acceptor.await() }
    try running.wait()
    sweeper.cancel()
    _ = try? sweeper.await()
    return HTTPServerSummary(
      requests: requests.load(ordering: .relaxed), connections: accepted.load(ordering: .relaxed),
      errors: errors.load(ordering: .relaxed))
  }

  /// Stops accepting and closes the idle connections; a connection in the middle of a request
  /// is closed once it is answered. Any thread may call it, more than once.
  public func stop() {
    stopping.store(true, ordering: .sequentiallyConsistent)
    for listener in listeners { listener.close() }
    closeExpired(now: uptimeNanoseconds())
  }

  /// Accepts connections until the listener is closed, each served by a coroutine of its own.
  /// Out of descriptors it waits before it accepts again (5 ms, doubling up to 1 s, as Go's
  /// `net/http` does) while the connections it has go on.
  private func accept(on listener: CoTCPListener, _ running: CoWaitGroup) {
    var failures = 0
    while true {
      do {
        let connection = try listener.accept()
        failures = 0
        accepted.add(1, ordering: .relaxed)
        let slot = ConnectionSlot(
          connection, deadline: deadline(after: configuration.headerTimeout))
        open.withLock { $0[ObjectIdentifier(slot)] = slot }
        running.add()
        co_launch(on: nil, detached: true) {
          defer {
            connection.close()
            _ = self.open.withLock { $0.removeValue(forKey: ObjectIdentifier(slot)) }
            running.done()
          }
          let (served, failed) = self.serve(connection, slot)
          self.requests.add(served, ordering: .relaxed)
          if failed > 0 { self.errors.add(failed, ordering: .relaxed) }
        }
      } catch let error as POSIXError where error.code == .EBADF {
        return  // stopped
      } catch {
        // EMFILE, ENFILE, ENOBUFS: the next accept may work once a connection has closed.
        failures += 1
        let pause = CoBackoff.exponential(initial: 0.005, maximum: 1).delay(afterFailure: failures)
        do { try co_delay(pause) } catch { return }
      }
    }
  }

  // region: connection
  /// One connection, from its first request to its close, as straight-line code: read what has
  /// arrived, answer every whole request in it (pipelined ones in order), read again. Returns
  /// the requests answered and the errors met.
  func serve(_ connection: CoTCPStream, _ slot: ConnectionSlot) -> (requests: Int, errors: Int) {
    let input = UnsafeMutableRawBufferPointer.allocate(
      byteCount: HTTPServerConfiguration.headLimit, alignment: 1)
    defer { input.deallocate() }
    var output = ResponseBuffer(responses)
    var start = 0  // the first byte not yet parsed
    var end = 0  // the end of the bytes received
    var answered = 0
    do {
      while true {
        switch HTTPParser.parse(UnsafeRawBufferPointer(rebasing: input[start..<end])) {
        case .complete(let head):
          answered += 1
          if answered == 1 { slot.answeredFirst() }
          slot.clearDeadline()
          let closing = !head.keepAlive || stopping.load(ordering: .relaxed)
          let status = route(head, input.baseAddress! + start)
          try output.append(status, head, closing: closing, flushingTo: connection)
          start += head.length
          // A body is read and dropped: nothing here takes one.
          var body = head.contentLength
          while body > 0 {
            if start == end {
              slot.expect(until: deadline(after: configuration.headerTimeout))
              (start, end) = (0, try connection.read(into: input))
              guard end > 0 else { return (answered, 0) }
            }
            let taken = min(body, end - start)
            (start, body) = (start + taken, body - taken)
          }
          if closing {
            try output.flush(to: connection)
            return (answered, 0)
          }
        case .invalid(let status):
          try output.append(status, closingTo: connection)
          try output.flush(to: connection)
          return (answered + 1, 1)
        case .incomplete where start == 0 && end == input.count:
          try output.append(.headerFieldsTooLarge, closingTo: connection)
          try output.flush(to: connection)
          return (answered + 1, 1)
        case .incomplete:
          try output.flush(to: connection)  // every whole request received is answered
          if start == end {
            (start, end) = (0, 0)
            // Idle between requests: the idle timeout runs (before the first request, the
            // header timeout from the accept, as in Go); a stop closes the connection now.
            let idleUntil = answered == 0 ? nil : deadline(after: configuration.idleTimeout)
            guard slot.becomeIdle(until: idleUntil, stopping) else { return (answered, 0) }
          } else {
            if start > 0 {  // the part to the front, for the rest to follow it
              input.copyMemory(from: UnsafeRawBufferPointer(rebasing: input[start..<end]))
              (start, end) = (0, end - start)
            }
            // Part of a head: the header timeout runs from its first byte.
            if !slot.hasDeadline {
              slot.expect(until: deadline(after: configuration.headerTimeout))
            }
          }
          let count = try connection.read(
            into: UnsafeMutableRawBufferPointer(rebasing: input[end...]))
          guard count > 0 else { return (answered, 0) }  // the client closed its side
          end += count
          slot.becomeBusy()
        }
      }
    } catch let error as POSIXError where error.code == .ECONNRESET || error.code == .EPIPE {
      return (answered, 0)  // the client left without reading its answers: its business
    } catch {
      // Closed by the sweeper (a timeout or a stop: it counted what was an error), or failed.
      return (answered, slot.expired ? 0 : 1)
    }
  }
  // endregion

  /// The answer to a whole head: 200 for `GET /` and `HEAD /`, 405 for another method on `/`,
  /// 404 elsewhere. `bytes` is where the head starts.
  private func route(_ head: HTTPRequestHead, _ bytes: UnsafeMutableRawPointer) -> HTTPStatus {
    let pathLength = head.pathEnd - head.target.lowerBound
    let isRoot =
      pathLength == 1
      && bytes.load(fromByteOffset: head.target.lowerBound, as: UInt8.self) == UInt8(ascii: "/")
    guard isRoot else { return .notFound }
    return head.method == .other ? .methodNotAllowed : .ok
  }

  /// The sweeping coroutine: every few milliseconds, closes the connections whose deadline
  /// has passed (their reads end with `EBADF`). Runs until cancelled.
  private func sweep() throws {
    // A tick of an eighth of the shortest timeout, between 5 and 250 ms: a timeout is
    // enforced within that much of its deadline.
    let shortest = min(configuration.idleTimeout, configuration.headerTimeout)
    let tick = min(max(shortest / 8, 0.005), 0.25)
    while true {
      try co_delay(tick)
      closeExpired(now: uptimeNanoseconds())
    }
  }

  /// Closes every connection past its deadline, and every idle one once stopping.
  private func closeExpired(now: UInt64) {
    let stopping = stopping.load(ordering: .sequentiallyConsistent)
    let expired = open.withLock { slots in
      slots.values.filter { $0.hasExpired(now: now, stopping: stopping) }
    }
    for slot in expired {
      // A head sent too slowly, or never; an idle keep-alive connection is an ordinary end.
      if !slot.isIdle || slot.isFresh { errors.add(1, ordering: .relaxed) }
      slot.close()
    }
  }

  private func deadline(after seconds: Double) -> UInt64 {
    uptimeNanoseconds() &+ UInt64(seconds * 1e9)
  }
}

/// What the sweeper knows of one connection: its stream, its deadline, whether it is idle.
final class ConnectionSlot: Sendable {
  private let stream: CoTCPStream
  /// When the connection is closed if still waiting, in `uptimeNanoseconds()`.
  private let deadline: Atomic<UInt64>
  private let idle = Atomic<Bool>(false)
  private let fresh = Atomic<Bool>(true)
  private let closed = Atomic<Bool>(false)

  init(_ stream: CoTCPStream, deadline: UInt64) {
    self.stream = stream
    self.deadline = Atomic(deadline)
  }

  /// True between requests, and before the first one's first byte.
  var isIdle: Bool { idle.load(ordering: .relaxed) }
  /// True until the first request is answered.
  var isFresh: Bool { fresh.load(ordering: .relaxed) }
  /// True once the sweeper has closed the connection.
  var expired: Bool { closed.load(ordering: .relaxed) }

  /// Notes that the first request has been answered.
  func answeredFirst() { fresh.store(false, ordering: .relaxed) }

  /// Marks the connection idle until `deadline` (nil: the deadline it has); false if the
  /// server is stopping (the
  /// connection then closes). The store comes before the load of `stopping`, and
  /// ``HTTPServer/stop()`` stores `stopping` before it looks at `idle`: one of the two sees the
  /// other.
  func becomeIdle(until deadline: UInt64?, _ stopping: borrowing Atomic<Bool>) -> Bool {
    if let deadline { self.deadline.store(deadline, ordering: .relaxed) }
    idle.store(true, ordering: .sequentiallyConsistent)
    return !stopping.load(ordering: .sequentiallyConsistent)
  }

  /// Marks the connection as no longer idle (bytes of a request came), without a deadline yet.
  func becomeBusy() {
    guard idle.load(ordering: .relaxed) else { return }
    idle.store(false, ordering: .sequentiallyConsistent)
    clearDeadline()
  }

  /// Marks the connection as in the middle of a request, until `deadline`.
  func expect(until deadline: UInt64) {
    self.deadline.store(deadline, ordering: .relaxed)
  }

  /// No deadline: the server is answering.
  func clearDeadline() {
    deadline.store(.max, ordering: .relaxed)
  }

  /// True when a deadline is set.
  var hasDeadline: Bool { deadline.load(ordering: .relaxed) != .max }

  func hasExpired(now: UInt64, stopping: Bool) -> Bool {
    (stopping && idle.load(ordering: .sequentiallyConsistent))
      || deadline.load(ordering: .relaxed) < now
  }

  func close() {
    closed.store(true, ordering: .relaxed)
    stream.close()
  }
}

/// Nanoseconds of `CLOCK_MONOTONIC`: a vDSO call, no system call and no allocation.
func uptimeNanoseconds() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}
