/// How long a segment takes from one simulated host to another, one way.
public enum CoLatency: Sendable, Equatable, CustomStringConvertible {
  /// Every segment takes exactly this many seconds.
  case fixed(Double)
  /// Each segment takes a number of seconds drawn uniformly from the range, from the test
  /// loop's seed, so the same seed draws the same latencies.
  case uniform(ClosedRange<Double>)

  /// As written in code: `.fixed(0.001)`, `.uniform(0.01...0.05)`.
  public var description: String {
    switch self {
    case .fixed(let seconds): ".fixed(\(seconds))"
    case .uniform(let range): ".uniform(\(range.lowerBound)...\(range.upperBound))"
    }
  }
}

/// A simulated network of hosts on a ``CoroutineTestLoop``: the code that uses
/// ``CoTCPListener`` and ``CoTCPStream`` runs unchanged on its hosts, on the loop's virtual
/// clock, with latency, loss, partitions and crashes, and no real socket is opened.
///
/// ```swift
/// let loop = CoroutineTestLoop(seed: 7)
/// let network = CoSimulatedNetwork(on: loop)
/// let server = network.addHost("server")
/// let client = network.addHost("client")
/// server.launch {
///   let listener = try CoTCPListener(port: 7)
///   let connection = try listener.accept()
///   try connection.write(try connection.read(upTo: 100))
/// }
/// let reply = client.launch { () throws -> [UInt8] in
///   let stream = try CoTCPStream.connect(host: "server", port: 7)
///   try stream.write(Array("ping".utf8))
///   return try stream.read(upTo: 100)
/// }
/// loop.advance(by: 1)
/// // reply holds "ping" after two round trips of 2 ms each
/// ```
///
/// - A coroutine launched by ``CoSimulatedHost/launch(name:_:)``, and every coroutine it
///   launches, is on that host: there a listener listens on the host, whatever `host:` it is
///   given, and a connection goes to another host by name or address (`"localhost"` and
///   `"127.0.0.1"` are the host itself).
/// - Every segment, connection attempt, refusal and reset is a timer on the loop's clock, so
///   nothing moves until the test advances the loop, and a loop with no pending timer has
///   nothing in flight.
/// - Latency draws and losses come from the loop's seed: the same seed gives the same ``trace``
///   and the same outcomes.
/// - A stream's send side is bounded as a real socket's is: each direction of a connection
///   holds at most 256 KiB written and not yet read by the peer. A write that does not fit
///   sends what does and waits for the peer to read, until its timeout passes on the virtual
///   clock (``CoroutineError/timedOut``), or fails as on a real socket once the connection is
///   gone (`POSIXError(.ECONNRESET)` when the peer crashed or closed without reading).
public final class CoSimulatedNetwork: Sendable {
  let world: SimulatedWorld

  /// Creates an empty network driven by `loop`'s virtual clock and seed.
  public init(on loop: CoroutineTestLoop) {
    world = SimulatedWorld(loop: loop)
  }

  /// Adds a host named `name`; hosts get the addresses `127.77.0.1`, `127.77.0.2`, … in the
  /// order they are added. A name used twice stops the program with a message naming it.
  public func addHost(_ name: String) -> CoSimulatedHost {
    CoSimulatedHost(network: self, index: world.addHost(name))
  }

  /// How long a segment takes one way; `.fixed(0.001)` unless set. A negative or NaN latency
  /// stops the program with a message naming it.
  public var latency: CoLatency {
    get { world.lock.withLock { world.latency } }
    set {
      let check = { (value: Double) in
        coPrecondition(
          !value.isNaN && value >= 0,
          "CoSimulatedNetwork.latency: \(newValue) has a negative or NaN latency \(value)")
      }
      switch newValue {
      case .fixed(let value): check(value)
      case .uniform(let range):
        check(range.lowerBound)
        check(range.upperBound)
      }
      world.lock.withLock { world.latency = newValue }
    }
  }

  /// The chance that a segment is lost on its way, from 0 up to but not including 1; 0 unless
  /// set. A lost segment is sent again after ``retransmitTimeout`` (and may be lost again), so a
  /// stream stays reliable and ordered, only later. A value out of range or NaN stops the
  /// program with a message naming it.
  public var lossRate: Double {
    get { world.lock.withLock { world.lossRate } }
    set {
      coPrecondition(
        !newValue.isNaN && newValue >= 0 && newValue < 1,
        "CoSimulatedNetwork.lossRate: \(newValue) is not in 0 ..< 1")
      world.lock.withLock { world.lossRate = newValue }
    }
  }

  /// Seconds after which a lost segment is sent again; 0.2 unless set. A negative or NaN value
  /// stops the program with a message naming it.
  public var retransmitTimeout: Double {
    get { world.lock.withLock { world.retransmitTimeout } }
    set {
      coPrecondition(
        !newValue.isNaN && newValue >= 0,
        "CoSimulatedNetwork.retransmitTimeout: \(newValue) is negative or NaN")
      world.lock.withLock { world.retransmitTimeout = newValue }
    }
  }

  /// Cuts `a` and `b` apart both ways: segments and connection attempts between them are held
  /// until ``repair(_:_:)`` or ``repairAll()``, then arrive in order.
  public func partition(_ a: CoSimulatedHost, _ b: CoSimulatedHost) {
    checkPair(a, b, "CoSimulatedNetwork.partition(_:_:)")
    world.setBlocked(a.index, b.index, true)
    world.setBlocked(b.index, a.index, true)
  }

  /// Cuts the way from `a` to `b` only: what `a` sends to `b` is held until repaired, while `b`
  /// still reaches `a`.
  public func partition(from a: CoSimulatedHost, to b: CoSimulatedHost) {
    checkPair(a, b, "CoSimulatedNetwork.partition(from:to:)")
    world.setBlocked(a.index, b.index, true)
  }

  /// Ends every partition between `a` and `b`, both ways; what they held goes on, in order, and
  /// arrives one latency later.
  public func repair(_ a: CoSimulatedHost, _ b: CoSimulatedHost) {
    checkPair(a, b, "CoSimulatedNetwork.repair(_:_:)")
    world.setBlocked(a.index, b.index, false)
    world.setBlocked(b.index, a.index, false)
  }

  /// Ends every partition of the network.
  public func repairAll() {
    world.repairAll()
  }

  /// A line per delivered segment, in the order they arrived: the virtual time, the sending
  /// and receiving host and port, and what it carried, e.g.
  /// `0.002000 client:49152 > server:7 data 4` (with `(resent 1)` after a segment that was
  /// lost once).
  public var trace: [String] {
    world.traceLines()
  }

  private func checkPair(_ a: CoSimulatedHost, _ b: CoSimulatedHost, _ call: StaticString) {
    coPrecondition(
      a.network === self && b.network === self, "\(call): a host of another network")
    coPrecondition(
      a.index != b.index, "\(call): \"\(a.name)\" cannot be partitioned from itself")
  }
}
