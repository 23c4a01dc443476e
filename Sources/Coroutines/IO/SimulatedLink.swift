/// What one segment of a simulated connection carries.
enum SimulatedSegment {
  /// A connection attempt.
  case connect
  /// The listener's answer: connected.
  case accept
  /// No listener on the port, or the host is down.
  case refuse
  case data([UInt8])
  /// The end of the sender's stream.
  case finish
  /// The sender's end is gone (crashed, or closed while data came).
  case reset

  /// The names of the kinds, as the trace prints them.
  static let kindNames = ["connect", "accept", "refuse", "data", "finish", "reset"]

  /// What the trace keeps of it: its kind (an index in ``kindNames``), and for data its size
  /// (formatted only when the trace is read, as a string per segment would cost more than
  /// delivering it).
  var traceEntry: (kind: UInt8, bytes: Int) {
    switch self {
    case .connect: (0, -1)
    case .accept: (1, -1)
    case .refuse: (2, -1)
    case .data(let bytes): (3, bytes.count)
    case .finish: (4, -1)
    case .reset: (5, -1)
    }
  }
}

/// One direction of a simulated connection: the segments on their way, in the order they were
/// sent, each with its arrival time.
///
/// Each segment gets a delivery at its arrival in the network's schedule (behind a timer of the
/// loop), but the delivery takes whatever is at the head of the queue and due, never "its"
/// segment: so a segment never overtakes an earlier one (a lost one, resent later).
/// A partition is checked on arrival: a link that meets one holds its queue until the way is
/// repaired, then sends it on, in order, one latency later.
///
/// A link is reached only through its connection, which each call names (`on`): a reference
/// of the link's own to its connection or its world cost a retain and a release at every use,
/// per segment.
final class SimulatedLink: @unchecked Sendable {  // used under the world's lock
  /// The side that sends on this link (0, the connecting side, or 1, the accepting one).
  let side: Int
  let from: Int
  let to: Int
  // Unchecked: the world's lock makes every access exclusive.
  @exclusivity(unchecked) private var queue:
    [(arrival: UInt64, segment: SimulatedSegment, resent: Int)] = []
  @exclusivity(unchecked) private var head = 0
  @exclusivity(unchecked) private var lastArrival: UInt64 = 0
  /// True while a partition holds the queue.
  private var isHeld = false

  init(side: Int, from: Int, to: Int) {
    self.side = side
    self.from = from
    self.to = to
  }

  /// Sends `segment`: it arrives one latency from now, after every segment sent before it,
  /// and later by a retransmission timeout for each time it is lost (`lossy`).
  func send(_ segment: SimulatedSegment, lossy: Bool = true, on connection: SimulatedConnection) {
    let world = connection.world
    let losses = lossy ? world.drawLosses() : 0
    let resendDelay = losses == 0 ? 0 : world.nanoseconds(world.retransmitTimeout) &* UInt64(losses)
    let now = world.now
    let arrival = max(now &+ resendDelay &+ world.drawLatency(), lastArrival)
    lastArrival = arrival
    queue.append((arrival, segment, losses))
    // The schedule holds the connection (which holds its links): a segment on its way keeps
    // the connection alive after both of its streams are gone, as the kernel keeps a socket
    // that still has data to deliver.
    if !isHeld { world.scheduleDelivery(connection, side: side, at: arrival, now: now) }
  }

  /// Drops what is on its way: the sender vanished.
  func drop(on connection: SimulatedConnection) {
    queue.removeAll()
    head = 0
    if isHeld {
      isHeld = false
      connection.world.held.removeAll { $0.connection === connection && $0.side == side }
    }
  }

  /// Sends the held segments on, in order, one latency after now.
  func release(on connection: SimulatedConnection) {
    isHeld = false
    let world = connection.world
    let now = world.now
    for index in head..<queue.count {
      let arrival = max(now &+ world.drawLatency(), lastArrival)
      lastArrival = arrival
      queue[index].arrival = arrival
      world.scheduleDelivery(connection, side: side, at: arrival, now: now)
    }
  }

  /// Delivers the segments at the head of the queue that are due by `now`, unless a partition
  /// cuts the way; then holds the queue.
  func deliverDue(now: UInt64, on connection: SimulatedConnection) {
    guard !isHeld, head < queue.count else { return }
    let world = connection.world
    if world.isBlocked(from, to) {
      isHeld = true
      world.held.append(HeldLink(connection: connection, side: side))
      return
    }
    while head < queue.count, queue[head].arrival <= now {
      // Moved out, leaving a segment without bytes: copying it out would retain and release
      // its bytes.
      var entry = (arrival: UInt64(0), segment: SimulatedSegment.reset, resent: 0)
      swap(&entry, &queue[head])
      let (segment, resent) = (entry.segment, entry.resent)
      head += 1
      let (kind, bytes) = segment.traceEntry
      world.record(
        SimulatedTraceRecord(
          time: now, from: UInt32(from), fromPort: connection.ports[side], to: UInt32(to),
          toPort: connection.ports[1 - side], kind: kind, bytes: bytes, resent: UInt32(resent)))
      connection.receive(segment, at: 1 - side)
    }
    if head == queue.count {
      queue.removeAll(keepingCapacity: true)
      head = 0
    }
  }
}

/// A link held by a partition, named through its connection, which it keeps alive (a link only
/// refers to its connection unowned).
struct HeldLink {
  let connection: SimulatedConnection
  let side: Int

  var link: SimulatedLink { connection.links[side] }

  /// Sends the held segments on (the way is repaired).
  func release() { link.release(on: connection) }
}
