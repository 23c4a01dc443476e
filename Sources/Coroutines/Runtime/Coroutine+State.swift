import Synchronization

/// Changes of a coroutine's lifecycle state (see ``CoroutineState``).
extension Coroutine {
  // MARK: State

  func compareAndSwap(_ expected: CoroutineState, _ desired: CoroutineState) -> Bool {
    state.compareExchange(expected: expected, desired: desired, ordering: .acquiringAndReleasing)
      .exchanged
  }

  /// Applies `event`; an illegal event is a bug in the runtime and stops the process.
  ///
  /// A plain store, not a compare-and-swap: only the thread driving the coroutine applies these
  /// events, and no waker can change the state meanwhile. A waker changes it only after
  /// claiming an armed wait, and every event here happens with no wait armed, or after the
  /// waker's own change (the `.park` of a coroutine woken early). The one transition that
  /// races with wakers, running → suspended, is the compare-and-swap in `switchedBack`.
  func transition(_ event: CoroutineState.Event) {
    let current = state.load(ordering: .acquiring)
    guard let next = current.after(event) else { illegal(event, from: current) }
    state.store(next, ordering: .releasing)
  }

  func illegal(_ event: CoroutineState.Event, from state: CoroutineState) -> Never {
    coStop(
      "coroutine \(name ?? "(unnamed)"): \(IllegalCoroutineTransition(state: state, event: event))")
  }
}
