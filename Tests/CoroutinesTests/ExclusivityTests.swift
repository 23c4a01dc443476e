import CUContext
import Dispatch
import Foundation
import Testing

@testable import Coroutines

/// Swift checks exclusive access at run time with a per-thread list of active accesses. Each
/// coroutine carries its own list (as Swift tasks do), so suspending inside an access neither
/// leaks it into the thread nor loses it when the coroutine moves threads.
@Suite struct ExclusivityTests {
  final class Counter: @unchecked Sendable {  // touched by one coroutine at a time in these tests
    var value = 0
  }

  /// Holds a `modify` access on `value` open while `body` suspends.
  static func mutate(_ value: inout Int, while body: () throws -> Void) rethrows {
    try body()
    value += 1
  }

  @Test func anAccessHeldAcrossASuspensionDoesNotLeakIntoTheThread() throws {
    let counter = Counter()
    let gate = CoPromise<Void>()
    try CoroutineLoop.run {
      co_launch { try Self.mutate(&counter.value) { try co_await(gate) } }
      try co_delay(0)  // the other coroutine is parked inside its access
      counter.value += 10  // the loop thread's own access: no "Simultaneous accesses" trap
      gate.fulfill(())
    }
    #expect(counter.value == 11)
  }

  @Test func anAccessBegunOnOneThreadEndsOnAnother() throws {
    let counter = Counter()
    let movedThreads = try CoroutineLoop.run { () -> Bool in
      let coroutine = try #require(Coroutine.current)
      let loopThread = threadID()
      var endedOn = loopThread
      Self.mutate(&counter.value) {
        coroutine.hop(to: DispatchQueue(label: "other thread"))  // the open access moves along
        endedOn = threadID()
      }  // …and ends here, on the queue's thread
      coroutine.hop(to: coroutine.home)
      counter.value += 1  // the loop thread's list was left intact
      return loopThread != endedOn
    }
    #expect(movedThreads)
    #expect(counter.value == 2)
  }

  @Test func aCoroutineUnwoundWhileSuspendedInsideAnAccessEndsItCleanly() throws {
    let counter = Counter()
    try CoroutineLoop.run {
      let task = co_launch { try Self.mutate(&counter.value) { try co_await(CoPromise<Void>()) } }
      try co_delay(0)
      task.cancel()  // unwinds through the access instead of abandoning its frame
      _ = try? task.await()
      counter.value += 1  // the thread's access list is intact
    }
    #expect(counter.value == 1)
  }

  /// A coroutine resumed while its resumer holds an access: the coroutine's own access, still
  /// open when it parks, must leave with it, and the resumer's must stay with the thread.
  @Test func aCoroutineResumedFromInsideAnAccessTakesOnlyItsOwnAccessAlong() throws {
    try Self.resumeFromInsideAnAccess()
  }

  /// The same where the shim cannot see the thread's access set and swaps through the runtime
  /// on every switch: the fallback must keep each access with its owner too.
  @Test func switchesThatAlwaysCallTheRuntimeKeepAccessesApart() throws {
    cu_exclusivity_force_runtime_swaps(1)
    defer { cu_exclusivity_force_runtime_swaps(0) }
    try Self.resumeFromInsideAnAccess()
  }

  static func resumeFromInsideAnAccess() throws {
    let outer = Counter()
    let inner = Counter()
    let numbers = co_sequence { (yield: CoYield<Int>) in
      try Self.mutate(&inner.value) {
        try yield(1)
        try yield(2)
      }
    }
    let iterator = numbers.makeIterator()
    Self.mutate(&outer.value) { #expect(iterator.next() == 1) }  // parks inside `inner`'s access
    inner.value += 10  // the thread no longer holds the coroutine's access: no trap
    Self.mutate(&outer.value) { #expect(iterator.next() == 2) }
    #expect(iterator.next() == nil)
    #expect(outer.value == 2)
    #expect(inner.value == 11)
  }

  /// On this platform switches find the thread's access set themselves and skip the runtime's
  /// swap when both sets are empty; if a new runtime hides the set, they fall back to always
  /// swapping, and this test says so.
  @Test func switchesCanSeeTheThreadsAccessSet() {
    #expect(cu_exclusivity_swap_skippable() == 1)
  }
}
