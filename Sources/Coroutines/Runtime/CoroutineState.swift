import Synchronization

/// The life of a coroutine as a pure state machine.
///
/// ```
/// created ──start──▶ running ──park──▶ suspended ──wake──▶ scheduled ──resume──▶ running
///                      │  ▲                ▲                   ▲
///                      │  └──────────── resume ────────────────┤
///                      ├──wake (before it got off its stack)──▶ wokenEarly ──park──┘
///                      │                                        └──keepRunning──▶ running
///                      ├──reschedule──▶ scheduled
///                      └──finish──▶ finished
/// ```
///
/// `wokenEarly` is the handshake that keeps two threads off one stack: a wake-up that arrives
/// while the coroutine is still on its way out only leaves a mark, and whoever switched the
/// coroutine out schedules its resumption once it is really off its stack.
enum CoroutineState: UInt8, CaseIterable, Sendable, CustomStringConvertible {
  case created, running, wokenEarly, suspended, scheduled, finished

  /// What can happen to a coroutine.
  enum Event: Sendable, CustomStringConvertible {
    /// Its scheduler runs it for the first time.
    case start
    /// It has switched out to wait for a wake-up.
    case park
    /// What it waits for has happened.
    case wake
    /// A wake-up arrived before it switched out: it carries on without switching.
    case keepRunning
    /// It switched out only to be run again by its scheduler (a hop or a yield).
    case reschedule
    /// Its scheduler runs it again.
    case resume
    /// Its body returned or threw.
    case finish

    var description: String {
      switch self {
      case .start: "start"
      case .park: "park"
      case .wake: "wake"
      case .keepRunning: "keepRunning"
      case .reschedule: "reschedule"
      case .resume: "resume"
      case .finish: "finish"
      }
    }
  }

  /// The state after `event`, or `nil` when the event is illegal in this state.
  func after(_ event: Event) -> CoroutineState? {
    switch (self, event) {
    case (.created, .start): .running
    case (.created, .finish): .finished  // cancelled before it ever ran
    case (.running, .park): .suspended
    case (.running, .wake): .wokenEarly
    case (.running, .reschedule): .scheduled
    case (.running, .finish): .finished
    case (.wokenEarly, .park): .scheduled
    case (.wokenEarly, .keepRunning): .running
    case (.suspended, .wake): .scheduled
    case (.scheduled, .resume): .running
    default: nil
    }
  }

  var description: String {
    switch self {
    case .created: "created"
    case .running: "running"
    case .wokenEarly: "woken early"
    case .suspended: "suspended"
    case .scheduled: "scheduled"
    case .finished: "finished"
    }
  }
}

/// An event that the state machine refuses.
struct IllegalCoroutineTransition: Error, Equatable, CustomStringConvertible {
  let state: CoroutineState
  let event: CoroutineState.Event

  var description: String { "a \(state) coroutine cannot \(event)" }

  static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.state == rhs.state && lhs.event.description == rhs.event.description
  }
}

extension CoroutineState {
  /// The state after `event`; throws when the event is illegal here.
  func applying(_ event: Event) throws(IllegalCoroutineTransition) -> CoroutineState {
    guard let next = after(event) else {
      throw IllegalCoroutineTransition(state: self, event: event)
    }
    return next
  }
}

/// Written out rather than left to the default for `RawRepresentable` types: that one is generic,
/// and in a debug build every load, store and compare-and-swap of a coroutine's state went
/// through it and looked up metadata at run time. A bit cast rather than `rawValue` and
/// `init(rawValue:)`, whose synthesized switches are as slow there: a case without payload is
/// stored as its index, which is its raw value (a test checks every case).
extension CoroutineState: AtomicRepresentable {
  typealias AtomicRepresentation = UInt8.AtomicRepresentation

  static func encodeAtomicRepresentation(_ value: consuming CoroutineState)
    -> UInt8.AtomicRepresentation
  {
    UInt8.encodeAtomicRepresentation(unsafeBitCast(value, to: UInt8.self))
  }

  static func decodeAtomicRepresentation(_ storage: consuming UInt8.AtomicRepresentation)
    -> CoroutineState
  {
    // Only `encodeAtomicRepresentation` writes the storage, so the byte is always a case.
    unsafeBitCast(UInt8.decodeAtomicRepresentation(storage), to: CoroutineState.self)
  }
}
