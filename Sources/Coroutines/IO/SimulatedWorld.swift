import Foundation

/// Everything a simulated network knows, behind one lock: its hosts, its settings, its
/// partitions, the random draws and the trace. Every delivery is a timer on `loop`, so the
/// network moves only when the test advances the loop, on the loop's thread.
final class SimulatedWorld: @unchecked Sendable {  // every mutable field is used under `lock`
  let loop: CoroutineTestLoop
  let lock = ShortLock()
  var hosts: [SimulatedHostRecord] = []
  var latency = CoLatency.fixed(0.001)
  var lossRate = 0.0
  var retransmitTimeout = 0.2
  /// The directions cut by a partition, as (from, to) host indices.
  private var blocked: Set<SimulatedRoute> = []
  /// Links whose next segment met a partition: they wait for a repair.
  var held: [HeldLink] = []
  /// Latency and loss draws: from the loop's seed, so that a seed replays them.
  @exclusivity(unchecked) private var random: SplitMix64
  @exclusivity(unchecked) private var records: [SimulatedTraceRecord] = []
  /// The deliveries on their way.
  @exclusivity(unchecked) var schedule = SimulatedSchedule()
  /// Where the loop's delivery timers find this world. A delivery runs under its lock, so a
  /// world released on another thread meanwhile waits in its deinit until the delivery is
  /// over; a delivery never releases its own world: what it lets go of (connections, segments,
  /// resumers) does not hold the world.
  let deliveries = OwnerHandle<SimulatedWorld>()

  init(loop: CoroutineTestLoop) {
    self.loop = loop
    random = SplitMix64(seed: loop.seed ?? 0)
    deliveries.attach(self)
  }

  deinit {
    deliveries.detach()
    // A timer of the loop that would deliver for this world goes with it.
    schedule.cancelTimer()
    schedule.dropAll()
  }

  // MARK: Hosts

  func addHost(_ name: String) -> Int {
    lock.withLock {
      coPrecondition(
        !hosts.contains { $0.name == name },
        "CoSimulatedNetwork.addHost(_:): the name \"\(name)\" is already a host's")
      let index = hosts.count
      coPrecondition(index < 65_534, "CoSimulatedNetwork.addHost(_:): too many hosts")
      let address = "127.77.\((index + 1) >> 8).\((index + 1) & 255)"
      hosts.append(SimulatedHostRecord(name: name, address: address))
      return index
    }
  }

  /// The host `target` names, seen from host `from`: its name, its address, or (for `from`
  /// itself) `localhost` and the loopback literals.
  func host(named target: String, from: Int) -> Int? {
    switch target {
    case "localhost", "127.0.0.1", "::1", "0.0.0.0", "::": return from
    default: return hosts.firstIndex { $0.name == target || $0.address == target }
    }
  }

  /// Takes host `index` down: its connections vanish (each peer is sent a reset), its
  /// listeners close, its life ends, and the tasks launched on it are cancelled.
  func crash(_ index: Int) {
    let (tasks, epoch) = lock.withLock { () -> ([any SimulatedHostTask], Int?) in
      let record = hosts[index]
      guard record.isUp else { return ([], nil) }
      record.isUp = false
      record.epoch += 1
      defer { record.tasks = [:] }
      // In the order they were launched: the order of their cancellations is the order their
      // coroutines run in next, which a seed must replay.
      let tasks = record.tasks.sorted { $0.key < $1.key }.map(\.value)
      return (tasks, record.epoch - 1)
    }
    // Cancelled first, so that the host's coroutines end with `CancellationError` rather than
    // with what their vanishing streams would say.
    for task in tasks { task.cancel() }
    // And every other coroutine of the host's life that ends: what its coroutines launched
    // detached or in a scope, wherever it waits (the bindings are inherited).
    if let epoch {
      let home = Unmanaged.passUnretained(loop as AnyObject).toOpaque()
      let orphans = CoroutineRegistry.coroutines(of: home) { binding in
        guard let onHost = binding as? SimulatedHostBinding else { return false }
        return onHost.host.index == index && onHost.epoch == epoch
      }
      for coroutine in orphans { coroutine.cancel() }
    }
    lock.withLock {
      let record = hosts[index]
      for connection in record.connections.values { connection.vanish(on: index) }
      for listener in record.listeners.values { listener.shut() }
      record.connections = [:]
      record.listeners = [:]
    }
  }

  /// A task launched on host `index` settled: the host's list lets go of it.
  func forgetTask(_ id: Int, on index: Int) {
    let task = lock.withLock { hosts[index].tasks.removeValue(forKey: id) }
    // Released after the lock: a task may hold the last reference to a stream, whose release
    // takes the lock to close it.
    withExtendedLifetime(task) {}
  }

  // MARK: Partitions

  func setBlocked(_ from: Int, _ to: Int, _ isBlocked: Bool) {
    lock.withLock {
      let route = SimulatedRoute(from: from, to: to)
      if isBlocked {
        blocked.insert(route)
      } else {
        blocked.remove(route)
        releaseHeld()
      }
    }
  }

  func repairAll() {
    lock.withLock {
      blocked = []
      releaseHeld()
    }
  }

  func isBlocked(_ from: Int, _ to: Int) -> Bool {
    // Asked for every delivery: without a partition, no hashing.
    !blocked.isEmpty && blocked.contains(SimulatedRoute(from: from, to: to))
  }

  /// Sends on again what the links held whose way is open now.
  private func releaseHeld() {
    let released = held.filter { !isBlocked($0.link.from, $0.link.to) }
    held.removeAll { !isBlocked($0.link.from, $0.link.to) }
    for held in released { held.release() }
  }

  // MARK: Time and chance

  /// The loop's virtual clock in nanoseconds.
  var now: UInt64 { loop.clockNanoseconds }

  /// A number in `0 ..< 1` from the seed.
  private func unit() -> Double {
    Double(random.next() >> 11) * 0x1p-53
  }

  /// One way's latency, drawn if it is uniform, in nanoseconds.
  func drawLatency() -> UInt64 {
    switch latency {
    case .fixed(let seconds): return nanoseconds(seconds)
    case .uniform(let range):
      let span = range.upperBound - range.lowerBound
      return nanoseconds(range.lowerBound + span * unit())
    }
  }

  /// How many times a segment sent now is lost before it gets through.
  func drawLosses() -> Int {
    guard lossRate > 0 else { return 0 }
    var losses = 0
    while unit() < lossRate { losses += 1 }
    return losses
  }

  func nanoseconds(_ seconds: Double) -> UInt64 { UInt64((seconds * 1e9).rounded()) }

  // MARK: Trace

  func record(_ record: SimulatedTraceRecord) {
    records.append(record)
  }

  func traceLines() -> [String] {
    lock.withLock {
      records.map { record in
        let from = hosts[Int(record.from)].name
        let to = hosts[Int(record.to)].name
        let kind = SimulatedSegment.kindNames[Int(record.kind)]
        var line = String(format: "%.6f", Double(record.time) / 1e9)
        line += " \(from):\(record.fromPort) > \(to):\(record.toPort) \(kind)"
        if record.bytes >= 0 { line += " \(record.bytes)" }
        if record.resent > 0 { line += " (resent \(record.resent))" }
        return line
      }
    }
  }
}

/// One direction between two hosts.
struct SimulatedRoute: Hashable {
  let from: Int
  let to: Int
}

/// A delivered segment, formatted only when the trace is read: 40 bytes, as a simulation
/// keeps one per segment it delivers.
struct SimulatedTraceRecord {
  let time: UInt64
  /// The size of a data segment; -1 for the others.
  let bytes: Int
  let from: UInt32
  let to: UInt32
  let resent: UInt32
  let fromPort: UInt16
  let toPort: UInt16
  /// An index in `SimulatedSegment.kindNames`.
  let kind: UInt8

  init(
    time: UInt64, from: UInt32, fromPort: UInt16, to: UInt32, toPort: UInt16, kind: UInt8,
    bytes: Int, resent: UInt32
  ) {
    self.time = time
    self.bytes = bytes
    self.from = from
    self.to = to
    self.resent = resent
    self.fromPort = fromPort
    self.toPort = toPort
    self.kind = kind
  }
}

/// A task launched on a host, which a crash cancels.
protocol SimulatedHostTask: AnyObject {
  func cancel()
}

extension CoTask: SimulatedHostTask {}

/// What the network knows of one host.
final class SimulatedHostRecord {
  let name: String
  let address: String
  var isUp = true
  /// Incremented by each crash: what belongs to an earlier life is gone.
  var epoch = 0
  var nextPort: UInt16 = 49_152
  var listeners: [UInt16: SimulatedListenerState] = [:]
  /// The connections with an end on this host that is still open.
  var connections: [ObjectIdentifier: SimulatedConnection] = [:]
  /// The tasks ``CoSimulatedHost/launch(name:_:)`` started in this life that have not
  /// settled, by the number of their launch.
  var tasks: [Int: any SimulatedHostTask] = [:]
  /// The number of the last task launched on the host.
  var nextTaskID = 0

  init(name: String, address: String) {
    self.name = name
    self.address = address
  }

  /// A port no listener and no connection of this host uses now, from the ephemeral range.
  func ephemeralPort() -> UInt16 {
    while true {
      let port = nextPort
      nextPort = nextPort == .max ? 49_152 : nextPort + 1
      if listeners[port] == nil { return port }
    }
  }
}
