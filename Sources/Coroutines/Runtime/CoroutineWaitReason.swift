/// Why a coroutine parks: what every park site writes into the coroutine's record as it arms
/// its wait, for dumps, ``CoroutineSnapshot/waitReason`` and the deadlock check.
///
/// One word, built from constants at the park site (the kind in the low byte, a descriptor in
/// the high half): recording it is one store beside the wait word's, with no string, no
/// allocation and no look-up. It becomes words only when a snapshot asks.
@usableFromInline
struct CoroutineWaitReason: Equatable, Sendable {
  @usableFromInline let bits: UInt64

  @inlinable init(bits: UInt64) { self.bits = bits }

  @inlinable init(kind: UInt8, descriptor: Int32 = 0) {
    bits = UInt64(kind) | UInt64(UInt32(bitPattern: descriptor)) << 32
  }

  @inlinable static var none: Self { Self(kind: 0) }
  @inlinable static var channelSend: Self { Self(kind: 1) }
  @inlinable static var channelReceive: Self { Self(kind: 2) }
  @inlinable static var select: Self { Self(kind: 3) }
  @inlinable static var future: Self { Self(kind: 4) }
  @inlinable static var delay: Self { Self(kind: 5) }
  @inlinable static func readable(_ descriptor: Int32) -> Self {
    Self(kind: 6, descriptor: descriptor)
  }
  @inlinable static func writable(_ descriptor: Int32) -> Self {
    Self(kind: 7, descriptor: descriptor)
  }
  @inlinable static var mutex: Self { Self(kind: 8) }
  @inlinable static var semaphore: Self { Self(kind: 9) }
  @inlinable static var waitGroup: Self { Self(kind: 10) }
  @inlinable static var condition: Self { Self(kind: 11) }
  @inlinable static var readLock: Self { Self(kind: 12) }
  @inlinable static var writeLock: Self { Self(kind: 13) }
  @inlinable static var generator: Self { Self(kind: 14) }
  @inlinable static var actor: Self { Self(kind: 15) }
  /// `co_await { callback in … }`: whoever calls the callback, perhaps another thread.
  @inlinable static var callback: Self { Self(kind: 16) }
  /// The Swift Concurrency bridge: a `Task` elsewhere ends the wait.
  @inlinable static var swiftTask: Self { Self(kind: 17) }
  /// A simulated network's stream or listener (see `CoSimulatedNetwork`): a segment, a
  /// connection or a reset on the test loop's clock ends the wait.
  @inlinable static var simulatedNetwork: Self { Self(kind: 18) }

  /// The same reason, marked as stamped with a test loop's virtual clock.
  var onVirtualClock: Self { Self(bits: bits | Self.virtualClockBit) }

  /// Set when the park was stamped with a test loop's virtual clock.
  static let virtualClockBit: UInt64 = 1 << 8

  /// True when the park was stamped with a test loop's virtual clock.
  var isOnVirtualClock: Bool { bits & Self.virtualClockBit != 0 }

  /// The kind alone, without the descriptor.
  var kind: UInt8 { UInt8(truncatingIfNeeded: bits) }

  /// True for a wait that something outside the coroutine's loop ends: a callback or a Swift
  /// task may be answered by another thread at any time, so a loop whose coroutines all wait
  /// like this is not deadlocked.
  var isAnsweredOutside: Bool { kind == 16 || kind == 17 }

  /// The words a dump shows, e.g. `channel receive` or `fd 7 readable`; nil for `.none`.
  var words: String? {
    let descriptor = Int32(bitPattern: UInt32(truncatingIfNeeded: bits >> 32))
    switch kind {
    case 1: return "channel send"
    case 2: return "channel receive"
    case 3: return "select"
    case 4: return "future"
    case 5: return "delay"
    case 6: return "fd \(descriptor) readable"
    case 7: return "fd \(descriptor) writable"
    case 8: return "mutex"
    case 9: return "semaphore"
    case 10: return "wait group"
    case 11: return "condition"
    case 12: return "read lock"
    case 13: return "write lock"
    case 14: return "generator"
    case 15: return "actor"
    case 16: return "callback"
    case 17: return "Swift task"
    case 18: return "simulated network"
    default: return nil
    }
  }
}

/// Reported through the unhandled-error handler (see `CoUnhandledErrors`) of a coroutine whose
/// wait ended because what it waited on was released without answering: a future that went
/// away unsettled, or a `co_await` callback dropped without being called. The coroutine itself
/// then throws `CancellationError`; this report says why, with its wait reason.
public struct CoroutineWaitAbandoned: Error, CustomStringConvertible {
  /// What the coroutine waited for, as ``CoroutineSnapshot/waitReason`` names it (`future`,
  /// `callback`, …).
  public let waitReason: String

  /// A sentence naming the wait and what happened to it.
  public var description: String {
    "its wait [\(waitReason)] ended because what it waited on was released without an answer;"
      + " the coroutine was woken with CancellationError"
  }
}
