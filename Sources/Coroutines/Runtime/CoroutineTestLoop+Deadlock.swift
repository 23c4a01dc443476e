/// Seeing a test loop's coroutines, and finding out when they can never go on.
extension CoroutineTestLoop {
  /// The loop's coroutines that are parked now, each with its wait reason, how long it has
  /// waited in virtual seconds, and its backtrace.
  public var parkedCoroutines: [CoroutineSnapshot] {
    let address = UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque())
    return CoroutineRegistry.snapshots(backtraces: true)
      .filter { $0.homeAddress == address && $0.isParked && $0.parkedOnItsTestLoop }
      .sorted { $0.number < $1.number }
  }

  /// Throws ``CoroutineDeadlock`` when the loop's coroutines can never go on: some are live,
  /// none is ready to run, no timer is pending, and every one of them is parked on the loop,
  /// waiting for something that only the loop's own coroutines could do (a channel, a future, a
  /// lock…). A coroutine waiting for a callback or a Swift task, or visiting another scheduler,
  /// may still be woken by another thread, so the loop is not deadlocked while there is one; a
  /// job another thread has posted is a ready job. A simulated network's segments in flight are
  /// the loop's timers.
  ///
  /// Call it at the end of a test, after ``runUntilIdle()`` or ``advance(by:)``: a waiter that
  /// nothing will wake then fails the test with its name, wait reason and frames, instead of
  /// leaking or hanging.
  ///
  /// ```swift
  /// let loop = CoroutineTestLoop()
  /// let channel = CoChannel<Int>()
  /// co_launch(on: loop, name: "consumer") { _ = try channel.receive() }
  /// loop.runUntilIdle()
  /// #expect(throws: CoroutineDeadlock.self) { try loop.checkForDeadlock() }
  /// ```
  public func checkForDeadlock() throws(CoroutineDeadlock) {
    guard liveCoroutines > 0, readyJobs == 0, pendingTimers == 0 else { return }
    let address = UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque())
    let mine = CoroutineRegistry.snapshots(backtraces: true).filter { $0.homeAddress == address }
    guard !mine.isEmpty,
      mine.allSatisfy({
        $0.isParked && $0.parkedOnItsTestLoop && !$0.reason.isAnsweredOutside
      }),
      readyJobs == 0, pendingTimers == 0
    else { return }
    throw CoroutineDeadlock(coroutines: mine.sorted { $0.number < $1.number }, loop: description)
  }
}

/// The coroutines of a ``CoroutineTestLoop`` that wait for each other, or for nothing, with no
/// timer or outside work left that could wake them: thrown by
/// ``CoroutineTestLoop/checkForDeadlock()``.
public struct CoroutineDeadlock: Error, CustomStringConvertible {
  /// Every coroutine of the loop, each parked, with its wait reason and backtrace.
  public let coroutines: [CoroutineSnapshot]
  /// The loop, with its seed and clock.
  let loop: String

  /// A header naming the loop, then each coroutine as a dump shows it: number, name, wait
  /// reason and time parked, frames.
  public var description: String {
    var text = "deadlock: \(coroutines.count) coroutine"
    text += coroutines.count == 1 ? " of " : "s of "
    text += "\(loop) wait, and nothing can wake "
    text += coroutines.count == 1 ? "it:\n" : "them:\n"
    for coroutine in coroutines {
      text += "\n"
      coroutine.writeEntry(to: &text)
    }
    return text
  }
}

extension CoroutineSnapshot {
  /// True when the coroutine parked on its own test loop, not while visiting another scheduler
  /// (`co_await(on:)`): only such a park is stamped with the loop's virtual clock (see
  /// `Coroutine.noteParkOffLoop`). Read from the record, not from the coroutine's scheduler,
  /// which only the coroutine's own thread may read.
  var parkedOnItsTestLoop: Bool { reason.isOnVirtualClock }
}
