import CUContext
import Synchronization

/// Backtraces of parked coroutines, taken only when a snapshot asks (see
/// ``CoroutineSnapshot/backtrace``): nothing is recorded for them while coroutines run.
///
/// The shim unwinds a parked coroutine's stack from the registers its switch saved, with
/// libunwind and the call-frame information of each function (see backtrace.c); here the
/// return addresses become names. Naming reads the binaries' symbol tables, which costs far
/// more than unwinding, so names are cached by address: the coroutines of a program park at a
/// few hundred places at most, and a dump of a hundred thousand of them names each place once.
enum CoroutineBacktraces {
  /// Frames kept per coroutine, innermost first; deeper ones are cut.
  static let depth = 64

  /// The return addresses of `coroutine`'s frames, or nil when they cannot be had: no unwinder,
  /// a shared stack, or a coroutine that was resumed while it was being unwound (its frames
  /// were changing under the unwinder, and what it found cannot be trusted).
  static func returnAddresses(of coroutine: Coroutine, on fiber: UInt) -> [UInt]? {
    let switches = coroutine.registryEntry.switches.load(ordering: .acquiring)
    guard let pointer = OpaquePointer(bitPattern: fiber) else { return nil }
    let frames = [UInt](unsafeUninitializedCapacity: depth) { buffer, count in
      let found = cu_fiber_backtrace(pointer, buffer.baseAddress!, depth)
      count = found < 0 ? 0 : found
    }
    let state = coroutine.currentState
    guard state == .suspended || state == .watched,
      coroutine.registryEntry.switches.load(ordering: .acquiring) == switches
    else { return nil }
    return frames.isEmpty ? nil : frames
  }

  /// Names by return address, for the life of the process: code does not move.
  private static let cache = Mutex(Names())

  /// Runs `body` with the cache of names, under its lock.
  static func withNames<R>(_ body: (inout Names) -> R) -> R {
    cache.withLock { body(&$0) }
  }

  /// Return addresses and their names.
  struct Names: ~Copyable {
    private var names: [UInt: String] = [:]

    /// The frame at return address `address`: its function's name and the offset, or the
    /// address in hexadecimal when no symbol covers it.
    mutating func name(of address: UInt) -> String {
      if let known = names[address] { return known }
      let named = Self.lookUp(address)
      names[address] = named
      return named
    }

    private static func lookUp(_ address: UInt) -> String {
      let capacity = 1024
      return withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer in
        // The address a call returns to may already be the next function's first byte (a call
        // that never returns ends its function): the call itself is one byte earlier.
        let offset = cu_symbol_name(address &- 1, buffer.baseAddress!, capacity)
        let hexadecimal = "0x" + String(address, radix: 16)
        guard offset >= 0 else { return hexadecimal }
        let name = String(cString: buffer.baseAddress!)
        return "\(name) + 0x\(String(offset + 1, radix: 16))"
      }
    }
  }
}
