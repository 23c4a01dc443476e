import Foundation

/// The transport of a ``CoTCPStream`` made on a simulated host: one side of a
/// ``SimulatedConnection``. Released without `close()`, it closes its side, as a released
/// stream closes its socket.
final class SimulatedEnd: Sendable {
  /// Held here: the connection refers to its world unowned.
  let world: SimulatedWorld
  let connection: SimulatedConnection
  let side: Int

  init(_ connection: SimulatedConnection, side: Int) {
    world = connection.world
    self.connection = connection
    self.side = side
  }

  deinit {
    // Never released under the world's lock: only streams hold an end.
    let (world, connection, side) = (self.world, self.connection, self.side)
    world.lock.withLock { connection.close(side) }
  }

  /// Connects from the host of `binding` to `target`'s `port`, one round trip later.
  static func connect(
    from binding: SimulatedHostBinding, to target: String, port: UInt16, timeout: Double?,
    call: StaticString
  ) throws -> SimulatedEnd {
    let world = binding.host.network.world
    let deadline = world.deadline(timeout, in: call)
    let connection = try world.lock.withLock { () throws -> SimulatedConnection in
      let from = binding.host.index
      try world.checkAlive(binding)
      guard let to = world.host(named: target, from: from) else {
        throw POSIXError(.EHOSTUNREACH)
      }
      let connection = SimulatedConnection(world: world, from: from, to: to, port: port)
      connection.links[0].send(.connect, on: connection)
      return connection
    }
    // Made outside the lock: its release (on a failure below) takes the lock to close it.
    let end = SimulatedEnd(connection, side: 0)
    _ = try end.waitUntil(deadline) { () throws -> Bool? in
      switch connection.sides[0].phase {
      case .connecting: return nil
      case .refused: throw POSIXError(.ECONNREFUSED)
      case .closed: throw POSIXError(.EBADF)
      case .open: return true
      default: throw POSIXError(.ECONNRESET)
      }
    }
    return end
  }

  func read(upTo maxBytes: Int, timeout: Double?, call: StaticString) throws -> [UInt8] {
    let deadline = world.deadline(timeout, in: call)
    if maxBytes == 0 { return [] }
    let (connection, side) = (self.connection, self.side)
    return try waitUntil(deadline) { try connection.read(side, upTo: maxBytes) }
  }

  func read(
    into buffer: UnsafeMutableRawBufferPointer, timeout: Double?, call: StaticString
  ) throws -> Int {
    let deadline = world.deadline(timeout, in: call)
    if buffer.isEmpty { return 0 }
    let (connection, side) = (self.connection, self.side)
    let bytes = try waitUntil(deadline) { try connection.read(side, upTo: buffer.count) }
    buffer.copyBytes(from: bytes)
    return bytes.count
  }

  /// Writes all of `bytes`, waiting for room in the window (see
  /// `SimulatedConnection.sendWindow`) while the peer does not read, until the virtual
  /// deadline.
  func write(_ bytes: [UInt8], timeout: Double?, call: StaticString) throws {
    let timeout = checkedTimeout(timeout, in: call)
    let (connection, side) = (self.connection, self.side)
    var sent = 0
    // Usually the window has room: one look under the lock, and no wait to set up.
    if try world.lock.withLock({ try connection.write(side, bytes, sent: &sent) }) { return }
    // The clock has not moved since the call began: nothing was waited for yet.
    let deadline = timeout.map { world.now &+ world.nanoseconds($0) }
    try world.wait(
      until: deadline, { try connection.write(side, bytes, sent: &sent) ? () : nil },
      register: { connection.sides[side].writers.append($0) },
      unregister: { connection.sides[side].writers.remove($0) })
  }

  func shutdownWrite() {
    world.lock.withLock { connection.shutdownWrite(side) }
  }

  func close() {
    world.lock.withLock { connection.close(side) }
  }

  /// Waits on this side until `attempt` (under the lock) returns a value.
  private func waitUntil<R>(_ deadline: UInt64?, _ attempt: () throws -> R?) throws -> R {
    let (connection, side) = (self.connection, self.side)
    return try world.wait(
      until: deadline, attempt,
      register: { connection.sides[side].waiters.append($0) },
      unregister: { connection.sides[side].waiters.remove($0) })
  }
}

extension SimulatedWorld {
  /// Throws `CancellationError` for a coroutine of a host life that a crash ended (a detached
  /// coroutine still running): it is not on the network any more.
  func checkAlive(_ binding: SimulatedHostBinding) throws {
    let record = hosts[binding.host.index]
    if !record.isUp || record.epoch != binding.epoch { throw CancellationError() }
  }
}
