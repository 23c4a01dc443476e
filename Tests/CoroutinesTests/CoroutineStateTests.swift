import Synchronization
import Testing

@testable import Coroutines

@Suite struct CoroutineStateTests {
  typealias Event = CoroutineState.Event

  static let allEvents: [Event] = [
    .start, .park, .wake, .keepRunning, .reschedule, .resume, .finish,
  ]
  static let allStates: [CoroutineState] = [
    .created, .running, .wokenEarly, .suspended, .scheduled, .finished,
  ]

  /// The whole legal table; every other pair must be refused.
  static let legal: [String: CoroutineState] = [
    "created/start": .running,
    "created/finish": .finished,
    "running/park": .suspended,
    "running/wake": .wokenEarly,
    "running/reschedule": .scheduled,
    "running/finish": .finished,
    "woken early/park": .scheduled,
    "woken early/keepRunning": .running,
    "suspended/wake": .scheduled,
    "scheduled/resume": .running,
  ]

  @Test func everyLegalTransitionLandsWhereTheTableSays() throws {
    for state in Self.allStates {
      for event in Self.allEvents {
        guard let expected = Self.legal["\(state)/\(event)"] else { continue }
        #expect(try state.applying(event) == expected, "\(state) + \(event)")
      }
    }
  }

  @Test func everyOtherTransitionIsAnError() {
    var refused = 0
    for state in Self.allStates {
      for event in Self.allEvents where Self.legal["\(state)/\(event)"] == nil {
        #expect(throws: IllegalCoroutineTransition(state: state, event: event)) {
          try state.applying(event)
        }
        refused += 1
      }
    }
    #expect(refused == Self.allStates.count * Self.allEvents.count - Self.legal.count)
  }

  /// The atomic state is stored as the case's index: it must be the raw value.
  @Test func everyStateSurvivesTheAtomicRoundTrip() {
    #expect(CoroutineState.allCases.count == Self.allStates.count)
    for state in CoroutineState.allCases {
      #expect(unsafeBitCast(state, to: UInt8.self) == state.rawValue, "\(state)")
      let stored = Atomic(CoroutineState.created)
      stored.store(state, ordering: .relaxed)
      let loaded = stored.load(ordering: .relaxed)
      #expect(loaded == state)
      let swapped = stored.compareExchange(expected: state, desired: .finished, ordering: .relaxed)
      #expect(swapped.exchanged && swapped.original == state)
    }
  }

  @Test func anIllegalTransitionNamesTheStateAndTheEvent() {
    let error = IllegalCoroutineTransition(state: .finished, event: .resume)
    #expect(error.description == "a finished coroutine cannot resume")
  }

  @Test func aFinishedCoroutineAcceptsNothing() {
    for event in Self.allEvents { #expect(CoroutineState.finished.after(event) == nil) }
  }

  @Test func aLiveCoroutineWalksThroughTheStates() throws {
    let promise = CoPromise<Int>()
    let observed = try CoroutineLoop.run { () -> [CoroutineState] in
      let task = co_launch { try co_await(promise) }
      var seen = [task.coroutine.currentState]  // created: not yet run
      try co_delay(0)  // let it start and park
      seen.append(task.coroutine.currentState)
      promise.fulfill(1)  // on the loop thread: the resume is queued
      seen.append(task.coroutine.currentState)
      _ = try task.await()
      seen.append(task.coroutine.currentState)
      return seen
    }
    #expect(observed == [.created, .suspended, .scheduled, .finished])
  }
}
