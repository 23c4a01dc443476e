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
  /// were changing under the unwinder, and what it found cannot be trusted). `fiber` is the
  /// address of its fiber, where its stack ends. `memo` carries what earlier calls of one
  /// snapshot found (see ``Memo``).
  static func returnAddresses(of coroutine: Coroutine, on fiber: UInt, memo: inout Memo) -> [UInt]?
  {
    let switches = coroutine.registryEntry.switches.load(ordering: .acquiring)
    guard let pointer = OpaquePointer(bitPattern: fiber) else { return nil }
    let frames = memo.frames(of: pointer, top: fiber)
    let state = coroutine.currentState
    guard state == .suspended,
      coroutine.registryEntry.switches.load(ordering: .acquiring) == switches
    else { return nil }
    return frames.isEmpty ? nil : frames
  }

  /// The frames found so far in one snapshot, by where a coroutine parked: its resume address
  /// and its depth in its stack.
  ///
  /// Unwinding costs several microseconds per coroutine, and the coroutines of a server park by
  /// the thousand at the same few places, through the same calls. A coroutine parked at the
  /// same address and depth as one unwound already is checked rather than unwound: each of the
  /// known frames' return addresses must be in its stack where that frame's stack pointer says.
  /// Those words are the chain of calls itself, so they match only for the same chain (the
  /// rest of each frame, its data, does not matter to a backtrace). A coroutine that does not
  /// match is unwound in full. A dump of a hundred thousand coroutines so takes a fraction of
  /// a second rather than seconds.
  struct Memo {
    private struct Place: Hashable {
      let pc: UInt
      let depth: UInt
    }
    private struct Known {
      let pcs: [UInt]
      /// Each frame's stack pointer, as bytes above the parked stack pointer.
      let offsets: [UInt]
    }
    private var known: [Place: Known] = [:]

    /// The return addresses of the suspended `fiber`'s frames, whose stack ends at `top`.
    mutating func frames(of fiber: OpaquePointer, top: UInt) -> [UInt] {
      let pc = cu_fiber_saved_pc(fiber)
      let sp = cu_fiber_saved_sp(fiber)
      guard sp < top else { return [] }
      let place = Place(pc: pc, depth: top - sp)
      if let frames = known[place], Self.stack(at: sp, top: top, holds: frames) {
        return frames.pcs
      }
      var sps = [UInt](repeating: 0, count: depth)
      let pcs = [UInt](unsafeUninitializedCapacity: depth) { buffer, count in
        let found = sps.withUnsafeMutableBufferPointer {
          cu_fiber_backtrace(fiber, buffer.baseAddress!, $0.baseAddress!, depth)
        }
        count = found < 0 ? 0 : found
      }
      if pcs.isEmpty { return [] }
      known[place] = Known(
        pcs: pcs, offsets: sps.prefix(pcs.count).map { $0 >= sp ? $0 &- sp : .max })
      return pcs
    }

    /// Whether the stack whose parked stack pointer is `sp` holds `frames`' return addresses
    /// where they were found, reading only below `top`.
    private static func stack(at sp: UInt, top: UInt, holds frames: Known) -> Bool {
      for index in 1..<frames.pcs.count {
        let offset = frames.offsets[index]
        guard offset >= 8, offset <= top &- sp,
          let slot = UnsafePointer<UInt>(bitPattern: sp &+ offset &- 8),
          slot.pointee == frames.pcs[index]
        else { return false }
      }
      return true
    }
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
