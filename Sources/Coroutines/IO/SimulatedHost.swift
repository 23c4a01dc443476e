/// A host of a ``CoSimulatedNetwork``: the coroutines it launches, and the coroutines they
/// launch, listen and connect on the simulated network instead of real sockets.
///
/// ```swift
/// let server = network.addHost("server")
/// server.launch(name: "echo") { try runEchoServer(port: 7) }   // unchanged server code
/// loop.advance(by: 1)
/// server.crash()     // its coroutines are cancelled; its peers see ECONNRESET
/// server.restart()   // up again, with nothing running
/// ```
public final class CoSimulatedHost: Sendable {
  let network: CoSimulatedNetwork
  let index: Int

  init(network: CoSimulatedNetwork, index: Int) {
    self.network = network
    self.index = index
  }

  /// The name given to ``CoSimulatedNetwork/addHost(_:)``; other hosts connect to it by it.
  public var name: String { network.world.lock.withLock { network.world.hosts[index].name } }

  /// The host's address, `127.77.0.N` for the Nth host added; other hosts connect to it by it.
  public var address: String {
    network.world.lock.withLock { network.world.hosts[index].address }
  }

  /// False between ``crash()`` and ``restart()``.
  public var isUp: Bool { network.world.lock.withLock { network.world.hosts[index].isUp } }

  /// Starts a coroutine on the network's test loop, on this host: it and every coroutine it
  /// launches use the simulated network. On a host that is down, the coroutine is cancelled
  /// before it starts.
  ///
  /// - Parameters:
  ///   - name: A name for diagnostics.
  ///   - body: The coroutine's code, unchanged from what runs on real sockets.
  /// - Returns: The task: await it, observe it, or cancel it.
  @discardableResult
  public func launch<T>(name: String? = nil, _ body: @escaping () throws -> T) -> CoTask<T> {
    let world = network.world
    let index = self.index
    let epoch = world.lock.withLock { world.hosts[index].epoch }
    // The launch inherits the launcher's coroutine-locals: bound here, the host reaches the new
    // coroutine and, through the same inheritance, everything it launches, at no cost to
    // launches that are on no host.
    let saved = CoLocalBinding.current
    CoLocalBinding.current = SimulatedHostBinding(host: self, epoch: epoch, next: saved)
    let task = co_launch(on: world.loop, name: name, body)
    CoLocalBinding.current = saved
    let id = world.lock.withLock { () -> Int? in
      let record = world.hosts[index]
      guard record.isUp && record.epoch == epoch else { return nil }
      record.nextTaskID += 1
      record.tasks[record.nextTaskID] = task
      return record.nextTaskID
    }
    guard let id else {
      task.cancel()
      return task
    }
    // Forgotten once settled: the host's list holding a finished task would hold its coroutine,
    // whose binding holds this host, its network and the list, a cycle that kept every network
    // alive after its test.
    task.whenSettled { _ in world.forgetTask(id, on: index) }
    return task
  }

  /// Crashes the host: every coroutine on it is cancelled (its `defer`s run), its listeners and
  /// connections vanish without a goodbye, and each peer's `read` or `write` throws
  /// `POSIXError(.ECONNRESET)` once the reset reaches it, one latency later. Does nothing on a
  /// host that is down.
  ///
  /// The tasks ``launch(name:_:)`` started are cancelled with their children, and so is every
  /// other coroutine they launched, detached or in a ``CoScope``, wherever it waits.
  public func crash() {
    network.world.crash(index)
  }

  /// Brings a crashed host up again, with nothing running and nothing listening: launch its
  /// coroutines again. Does nothing on a host that is up.
  public func restart() {
    network.world.lock.withLock { network.world.hosts[index].isUp = true }
  }
}

/// The host a coroutine is on: a coroutine-local binding, so that the coroutines a host's
/// coroutine launches inherit it like any other.
final class SimulatedHostBinding: CoLocalBinding, @unchecked Sendable {  // immutable
  let host: CoSimulatedHost
  /// The host's life the coroutine belongs to: after a crash, coroutines of the old life that
  /// are still running (detached ones) are not on the network any more.
  let epoch: Int

  /// The key of the binding: one object for the process.
  private static let key = Key()
  private final class Key: Sendable {}

  init(host: CoSimulatedHost, epoch: Int, next: CoLocalBinding?) {
    self.host = host
    self.epoch = epoch
    super.init(key: Self.key, next: next)
  }

  /// The binding of the running coroutine, or nil on the real network. A stream or listener
  /// asks once, when it is made: reads and writes never do.
  static var ofCurrentCoroutine: SimulatedHostBinding? {
    guard let binding = CoLocalBinding.innermost(of: key) else { return nil }
    return binding._withUnsafeGuaranteedRef { unsafeDowncast($0, to: SimulatedHostBinding.self) }
  }
}
