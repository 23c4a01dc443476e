import Foundation

/// A simulated TCP connection: two sides (0 connected, 1 accepted), each on its host, and a
/// link each way. All of it is used under the world's lock.
final class SimulatedConnection: @unchecked Sendable {  // used under the world's lock
  /// The bytes one side may have written that its peer has not read yet, in each direction:
  /// about what a real connection's send and receive buffers hold together before a write
  /// blocks (Linux starts a loopback connection with 128 KiB to receive and grows its 16 KiB
  /// to send as needed).
  static let sendWindow = 256 * 1024

  /// Unowned: the world holds its connections (in its hosts' lists, its schedule and its held
  /// links), and a connection holding it back would keep a network with segments on their way
  /// alive after everything else let go of it. A stream's end holds the world itself.
  unowned(unsafe) let world: SimulatedWorld
  let hosts: SimulatedSides<Int>
  let ports: SimulatedSides<UInt16>
  /// The hosts' lives the sides belong to.
  let epochs: SimulatedSides<Int>
  // Unchecked: the world's lock makes every access exclusive.
  @exclusivity(unchecked) var sides = [Side(), Side()]
  let links: SimulatedSides<SimulatedLink>

  /// Where one side is in its life.
  enum Phase {
    /// Not there yet: the accepting side before the attempt arrives.
    case absent
    case connecting
    /// Arrived at the listener, not yet accepted (it takes data already).
    case waiting
    case open
    case refused
    /// The peer reset the connection.
    case reset
    /// Closed by its own program.
    case closed
    /// Its host crashed.
    case vanished
  }

  struct Side {
    var phase = Phase.absent
    var inbound: [UInt8] = []
    var consumed = 0
    /// The peer finished its stream: reads end once `inbound` is read.
    var finished = false
    /// This side finished its own stream (`shutdownWrite` or `close`).
    var sentFinish = false
    /// The bytes this side wrote that its peer has not read yet: at most `sendWindow`.
    var unread = 0
    /// The coroutines waiting to read (or to connect) on this side.
    var waiters = SimulatedWaiters()
    /// The coroutines waiting to write on this side, for room in the window: apart from the
    /// readers, so that room made by the peer's reads wakes no reader of this side for nothing.
    var writers = SimulatedWaiters()

    /// The peer read `count` of the bytes this side wrote: wakes the writers waiting for room.
    mutating func madeRoom(_ count: Int) {
      unread -= count
      writers.resumeAll(.success(()))
    }

    var isLive: Bool {
      switch phase {
      case .connecting, .waiting, .open: true
      default: false
      }
    }
  }

  init(world: SimulatedWorld, from client: Int, to server: Int, port: UInt16) {
    self.world = world
    hosts = SimulatedSides(client, server)
    epochs = SimulatedSides(world.hosts[client].epoch, world.hosts[server].epoch)
    ports = SimulatedSides(world.hosts[client].ephemeralPort(), port)
    links = SimulatedSides(
      SimulatedLink(side: 0, from: client, to: server),
      SimulatedLink(side: 1, from: server, to: client))
    sides[0].phase = .connecting
    world.hosts[client].connections[ObjectIdentifier(self)] = self
  }

  /// Wakes the coroutines waiting to read on `side`: each looks again at what changed.
  func wake(_ side: Int) {
    sides[side].waiters.resumeAll(.success(()))
  }

  /// Wakes every coroutine waiting on `side`, writers too: the side cannot be used any more.
  func wakeAll(_ side: Int) {
    sides[side].waiters.resumeAll(.success(()))
    sides[side].writers.resumeAll(.success(()))
  }

  /// A segment arrived at `side` (from the other side).
  func receive(_ segment: SimulatedSegment, at side: Int) {
    if case .connect = segment {
      arriveAtListener()
      return
    }
    switch sides[side].phase {
    case .closed:
      // Nobody reads there: a peer still talking is told so, as TCP answers with a reset.
      switch segment {
      case .data, .accept: links[side].send(.reset, lossy: false, on: self)
      default: break
      }
      return
    case .vanished, .absent:
      return  // a crashed side sent its reset when it vanished
    case .refused, .reset:
      return
    case .connecting, .waiting, .open:
      break
    }
    switch segment {
    case .accept: sides[side].phase = .open
    case .refuse:
      sides[side].phase = .refused
      forget(side)
    case .data(let bytes):
      // Taken as it is when nothing waits to be read: the writer's bytes reach the reader
      // without a copy.
      if sides[side].inbound.isEmpty {
        sides[side].inbound = bytes
      } else {
        sides[side].inbound += bytes
      }
    case .finish: sides[side].finished = true
    case .reset:
      sides[side].phase = .reset
      sides[side].inbound = []
      sides[side].consumed = 0
      forget(side)
      wakeAll(side)
      return
    case .connect: break
    }
    wake(side)
  }

  /// The connection attempt reached the accepting host: a listener takes it, or it is refused.
  private func arriveAtListener() {
    let host = world.hosts[hosts[1]]
    guard sides[1].phase == .absent else { return }
    guard host.isUp, host.epoch == epochs[1], let listener = host.listeners[ports[1]] else {
      links[1].send(.refuse, on: self)
      return
    }
    sides[1].phase = .waiting
    host.connections[ObjectIdentifier(self)] = self
    listener.backlog.append(self)
    listener.wakeAll()
    links[1].send(.accept, on: self)
  }

  /// The host of `host` crashed: the sides there vanish, with what they were sending, and a
  /// peer that knows of the connection is sent a reset.
  func vanish(on host: Int) {
    for side in 0..<2 where hosts[side] == host && sides[side].isLive {
      sides[side].phase = .vanished
      links[side].drop(on: self)
      if sides[1 - side].phase != .absent { links[side].send(.reset, lossy: false, on: self) }
      // Whoever still waits there is a coroutine of the crashed host that was not cancelled
      // with its tasks (a detached one): it is cancelled at this wait.
      sides[side].waiters.resumeAll(.failure(CancellationError()))
      sides[side].writers.resumeAll(.failure(CancellationError()))
    }
  }

  /// Takes the connection out of `side`'s host's list once nothing there is open.
  private func forget(_ side: Int) {
    let host = hosts[side]
    if !(0..<2).contains(where: { hosts[$0] == host && sides[$0].isLive }) {
      world.hosts[host].connections[ObjectIdentifier(self)] = nil
    }
  }

  // MARK: The calls of a side (under the world's lock)

  /// What a read finds now: bytes, `[]` at the end, nil if it must wait; throws for a side
  /// that cannot be read.
  func read(_ side: Int, upTo maxBytes: Int) throws -> [UInt8]? {
    try check(side)
    let available = sides[side].inbound.count - sides[side].consumed
    if available == 0 { return sides[side].finished ? [] : nil }
    let start = sides[side].consumed
    if start == 0 && available <= maxBytes {
      // Moved out, not copied: a copy would retain the bytes here and release them below.
      var bytes: [UInt8] = []
      swap(&bytes, &sides[side].inbound)
      madeRoom(available, readAt: side)
      return bytes
    }
    let count = min(available, maxBytes)
    let bytes = Array(sides[side].inbound[start..<start + count])
    if count == available {
      sides[side].inbound.removeAll(keepingCapacity: true)
      sides[side].consumed = 0
    } else {
      sides[side].consumed += count
    }
    madeRoom(count, readAt: side)
    return bytes
  }

  /// `side` read `count` bytes: its peer may write as many more.
  private func madeRoom(_ count: Int, readAt side: Int) {
    sides[1 - side].madeRoom(count)
  }

  /// Sends from `side` what fits in the window of `bytes` from `sent` on, counting it in
  /// `sent`: true once every byte is sent, false while the window is full (the peer has not
  /// read enough), as a real socket's send buffer takes what it has room for.
  func write(_ side: Int, _ bytes: [UInt8], sent: inout Int) throws -> Bool {
    try check(side)
    if sides[side].sentFinish { throw POSIXError(.EPIPE) }
    let remaining = bytes.count - sent
    if remaining == 0 { return true }
    let room = Self.sendWindow - sides[side].unread
    if room <= 0 { return false }
    let count = min(room, remaining)
    // The array itself when it goes whole, as it usually does: no copy of the bytes.
    let segment = count == bytes.count ? bytes : Array(bytes[sent..<sent + count])
    sides[side].unread += count
    sent += count
    links[side].send(.data(segment), on: self)
    return sent == bytes.count
  }

  func shutdownWrite(_ side: Int) {
    guard sides[side].isLive, !sides[side].sentFinish else { return }
    sides[side].sentFinish = true
    links[side].send(.finish, on: self)
  }

  func close(_ side: Int) {
    guard sides[side].phase != .closed else { return }
    let wasLive = sides[side].isLive
    if sides[side].phase == .connecting {
      // Given up before the answer came (a timeout, say): the attempt stops, as a closed
      // socket stops sending its SYN, so a partition that held it does not deliver it later.
      links[side].drop(on: self)
    } else if wasLive {
      shutdownWrite(side)
    }
    sides[side].phase = .closed
    sides[side].inbound = []
    sides[side].consumed = 0
    if wasLive { forget(side) }
    // Nothing will be read here any more: what the peer writes from now on is answered with a
    // reset when it arrives, so the peer's writer goes on until it learns of it.
    sides[1 - side].unread = 0
    sides[1 - side].writers.resumeAll(.success(()))
    wakeAll(side)
  }

  /// Throws what a call on `side` throws once it cannot be used.
  private func check(_ side: Int) throws {
    switch sides[side].phase {
    case .closed: throw POSIXError(.EBADF)
    case .reset, .vanished, .refused: throw POSIXError(.ECONNRESET)
    default: break
    }
  }
}

/// Two values, one per side of a connection (0, the connecting side, or 1, the accepting one),
/// indexed as an array of two is, but stored inline: reading one side's value retains no array
/// buffer, per segment.
struct SimulatedSides<Element> {
  let first: Element
  let second: Element

  init(_ first: Element, _ second: Element) {
    self.first = first
    self.second = second
  }

  subscript(side: Int) -> Element {
    @inline(__always) get { side == 0 ? first : second }
  }
}
