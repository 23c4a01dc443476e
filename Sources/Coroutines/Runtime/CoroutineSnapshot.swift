import CUContext
import Dispatch
import Glibc

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
    self.state = state.description
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

/// Bytes of stack touched below `top` (a fiber's address: its stack ends there), looking at most
/// `size` bytes down, to the page. The kernel says which pages are resident (`mincore`), so the
/// stack itself is never read and an address that is no longer mapped gives 0.
func stackHighWater(below top: UnsafeRawPointer, looking size: Int) -> Int {
  let page = UInt(cu_page_size())
  let end = UInt(bitPattern: top)
  let first = (end &- UInt(size)) & ~(page - 1)
  let pages = Int(((end + page - 1) & ~(page - 1) &- first) / page)
  let chunkPages = 256
  return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: chunkPages) { resident in
    // From the bottom up in chunks: the first resident page is the deepest one touched.
    var done = 0
    while done < pages {
      let chunk = min(pages - done, chunkPages)
      let start = UnsafeMutableRawPointer(bitPattern: first + UInt(done) * page)
      guard mincore(start, chunk * Int(page), resident.baseAddress) == 0 else { return 0 }
      if let index = (0..<chunk).first(where: { resident[$0] & 1 != 0 }) {
        let deepest = first + UInt(done + index) * page
        return deepest >= end ? 0 : Int(end - deepest)
      }
      done += chunk
    }
    return 0
  }
}
