import Foundation

/// A listening port of a simulated host: the connections that arrived and wait to be accepted.
final class SimulatedListenerState: @unchecked Sendable {  // used under the world's lock
  let host: Int
  let port: UInt16
  var backlog: [SimulatedConnection] = []
  var waiters = SimulatedWaiters()
  var isClosed = false

  init(host: Int, port: UInt16) {
    self.host = host
    self.port = port
  }

  func wakeAll() {
    waiters.resumeAll(.success(()))
  }

  /// Stops listening: connections not yet accepted are reset, as TCP resets them.
  func shut() {
    guard !isClosed else { return }
    isClosed = true
    for connection in backlog where connection.sides[1].phase == .waiting {
      connection.sides[1].phase = .closed
      connection.links[1].send(.reset, lossy: false, on: connection)
    }
    backlog = []
    wakeAll()
  }
}

/// The transport of a ``CoTCPListener`` made on a simulated host. Released without `close()`,
/// it stops listening, as a released listener closes its socket.
final class SimulatedListener: Sendable {
  let world: SimulatedWorld
  let state: SimulatedListenerState

  /// Listens on `port` of the host of `binding` (port 0: an ephemeral one).
  init(on binding: SimulatedHostBinding, port: UInt16) throws {
    let world = binding.host.network.world
    self.world = world
    state = try world.lock.withLock {
      try world.checkAlive(binding)
      let record = world.hosts[binding.host.index]
      let port = port == 0 ? record.ephemeralPort() : port
      if record.listeners[port] != nil { throw POSIXError(.EADDRINUSE) }
      let state = SimulatedListenerState(host: binding.host.index, port: port)
      record.listeners[port] = state
      return state
    }
  }

  deinit {
    // Never released under the world's lock: only listeners hold it.
    let (world, state) = (self.world, self.state)
    world.lock.withLock { world.closeListener(state) }
  }

  var port: UInt16 { state.port }

  func accept(timeout: Double?, call: StaticString) throws -> CoTCPStream {
    let deadline = world.deadline(timeout, in: call)
    let state = self.state
    let connection = try world.wait(
      until: deadline,
      { () throws -> SimulatedConnection? in
        if state.isClosed { throw POSIXError(.EBADF) }
        while !state.backlog.isEmpty {
          let connection = state.backlog.removeFirst()
          // One reset before it was taken is skipped, as `accept` skips an aborted connection.
          if connection.sides[1].phase == .waiting {
            connection.sides[1].phase = .open
            return connection
          }
        }
        return nil
      },
      register: { state.waiters.append($0) },
      unregister: { state.waiters.remove($0) })
    return CoTCPStream(simulated: SimulatedEnd(connection, side: 1))
  }

  func close() {
    let (world, state) = (self.world, self.state)
    world.lock.withLock { world.closeListener(state) }
  }
}

extension SimulatedWorld {
  func closeListener(_ state: SimulatedListenerState) {
    guard !state.isClosed else { return }
    let record = hosts[state.host]
    if record.listeners[state.port] === state { record.listeners[state.port] = nil }
    state.shut()
  }
}
