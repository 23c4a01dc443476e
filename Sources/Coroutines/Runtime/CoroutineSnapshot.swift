import Dispatch

/// One live coroutine as a dump shows it, taken at one moment (it may have moved on since).
public struct CoroutineSnapshot: Sendable, CustomStringConvertible {
  /// The name given at launch, if any.
  public let name: String?
  /// Where it is in its life: `created`, `running`, `suspended`, `scheduled` (ready to run),
  /// `woken early` (woken while switching out) or `finished`.
  public let state: String
  /// True once the coroutine has been cancelled.
  public let isCancelled: Bool
  /// The scheduler the coroutine belongs to (it may be visiting another for `co_await(on:)`).
  public let scheduler: String
  /// The stack size it asked for, in bytes.
  public let stackSize: Int
  /// Bytes of its stack touched so far (page granularity), or `nil` before it starts. A stack
  /// reused from the pool counts the deepest use of every coroutine that ran on it.
  public internal(set) var stackUsed: Int?
  /// Switches into the coroutine so far; the stall watchdog watches it stand still.
  let switches: UInt64
  /// The coroutine's address, to recognise it in a later snapshot.
  let identity: UInt
  let isRunning: Bool

  init(_ coroutine: Coroutine, identity: UInt) {
    let state = coroutine.currentState
    self.name = coroutine.name
    self.state = state.reported
    self.isRunning = state == .running || state == .wokenEarly
    self.isCancelled = coroutine.isCancelled
    self.scheduler = describe(coroutine.home)
    self.stackSize = coroutine.stackSize
    self.stackUsed = nil
    self.switches = coroutine.registryEntry.switches.load(ordering: .relaxed)
    self.identity = identity
  }

  /// One line: name, state, scheduler, stack size and use.
  public var description: String {
    var line = name.map { "\"\($0)\"" } ?? "(unnamed)"
    line += " \(state)"
    if isCancelled { line += ", cancelled" }
    line += "; scheduler: \(scheduler); stack: \(stackSize) bytes"
    if let stackUsed { line += ", \(stackUsed) used" }
    return line
  }
}

private func describe(_ scheduler: any CoroutineScheduler) -> String {
  let address = String(UInt(bitPattern: ObjectIdentifier(scheduler)), radix: 16)
  if let queue = scheduler as? DispatchQueue { return "DispatchQueue \"\(queue.label)\"" }
  if scheduler === CoroutineLoop.main { return "CoroutineLoop.main" }
  return "\(type(of: scheduler)) 0x\(address)"
}
