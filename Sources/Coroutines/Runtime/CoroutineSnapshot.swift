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
  /// Why the coroutine is parked, in words that name the kind of wait: `channel send`,
  /// `channel receive`, `select`, `future`, `delay`, `fd 7 readable` or `fd 7 writable`,
  /// `mutex`, `semaphore`, `wait group`, `condition`, `read lock`, `write lock`, `generator`,
  /// `actor`, `callback` (`co_await` of a callback) or `Swift task`. `nil` unless parked.
  public var waitReason: String? { isParked ? reason.words : nil }
  /// Seconds the coroutine has been parked, on its scheduler's clock: virtual seconds on a
  /// ``CoroutineTestLoop``; on a ``CoroutineLoop``, from the loop's latest clock reading when
  /// it parked, which is at most a few hundred jobs old (a fraction of a millisecond when they
  /// are quick); elsewhere, from the coarse monotonic clock (a few milliseconds). `nil` unless
  /// parked.
  public internal(set) var waitingFor: Double?
  /// The frames of a parked coroutine's own stack, innermost first, each a function's name
  /// (demangled for Swift) and the return address's offset in it, e.g.
  /// `MyApp.fetch(url:) + 0x5c`: the function that parked is there by name. Taken when the
  /// snapshot is; empty for a coroutine that is not parked, one on a shared stack (its frames
  /// are saved away while it waits), or where libunwind is missing. Addresses that no symbol
  /// covers show as hexadecimal.
  public internal(set) var backtrace: [String] = []
  /// Switches into the coroutine so far; the stall watchdog watches it stand still.
  let switches: UInt64
  /// The coroutine's address, to recognise it in a later snapshot.
  let identity: UInt
  /// The coroutine's number in dumps: its place in the registry, stable for its life.
  let number: Int
  let isRunning: Bool
  /// True while it waits to be woken (suspended).
  let isParked: Bool
  /// What it waits for, as recorded when it parked.
  let reason: CoroutineWaitReason
  /// When it parked, on its scheduler's clock (nanoseconds).
  let parkedAt: UInt64
  /// The address of the scheduler it belongs to, to pick a loop's coroutines out.
  let homeAddress: UInt

  init(_ coroutine: Coroutine, identity: UInt) {
    let state = coroutine.currentState
    self.name = coroutine.name
    self.state = state.description
    self.isRunning = state == .running || state == .wokenEarly
    self.isParked = state == .suspended
    self.reason = CoroutineWaitReason(
      bits: coroutine.registryEntry.waitReason.load(ordering: .relaxed))
    self.parkedAt = coroutine.registryEntry.parkedAt.load(ordering: .relaxed)
    self.number = coroutine.registryEntry.slot.load(ordering: .relaxed)
    self.homeAddress = UInt(bitPattern: coroutine.homeAddress)
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

extension CoroutineSnapshot {
  /// The entry of a dump: `coroutine 17 "fetch-3" [channel receive, 2.5 s]:`, the frames, and
  /// the one-line description.
  func writeEntry(to text: inout String) {
    text += "coroutine \(number) "
    text += name.map { "\"\($0)\"" } ?? "(unnamed)"
    if let waitReason {
      text += " [\(waitReason)"
      if let waitingFor { text += ", \(Self.seconds(waitingFor))" }
      text += "]:\n"
    } else {
      text += " [\(state)]:\n"
    }
    for frame in backtrace { text += "    \(frame)\n" }
    text += "  \(description)\n"
  }

  /// `seconds` as a dump shows it: `2.5 s`, `0.003 s`, `3 minutes`.
  static func seconds(_ seconds: Double) -> String {
    if seconds >= 120 { return "\(Int(seconds / 60)) minutes" }
    if seconds >= 10 { return "\(Int(seconds.rounded())) s" }
    if seconds >= 1 { return "\((seconds * 10).rounded() / 10) s" }
    return "\((seconds * 1000).rounded() / 1000) s"
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
