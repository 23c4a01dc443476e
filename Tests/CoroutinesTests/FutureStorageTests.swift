import Synchronization
import Testing

@testable import Coroutines

/// A future keeps a small trivial value in a word of its own and any other value in a box: both
/// must come back intact, and a boxed value must be released with the future (not leaked, not
/// released twice).
@Suite struct FutureStorageTests {
  struct Failure: Error, Equatable { let code: Int }

  /// How many `Tracked` values are alive.
  final class Counter: Sendable {
    let live = Atomic<Int>(0)
    var count: Int { live.load(ordering: .relaxed) }
  }

  /// Counts its live instances, so a test sees a value freed with its future.
  final class Tracked: Sendable {
    let counter: Counter
    let value: Int
    init(_ value: Int, counter: Counter) {
      self.value = value
      self.counter = counter
      counter.live.add(1, ordering: .relaxed)
    }
    deinit { counter.live.subtract(1, ordering: .relaxed) }
  }

  /// Wider than a word and not trivial: kept in a box.
  struct Wide: Equatable {
    var name: String
    var numbers: [Int]
    var flag: Bool
  }

  @Test func valuesOfEveryShapeComeBackIntact() throws {
    let void = CoPromise<Void>()
    void.fulfill(())
    #expect(throws: Never.self) { try void.result?.get() }

    let int = CoPromise<Int>()
    int.fulfill(-42)
    #expect(try int.result?.get() == -42)

    let byte = CoPromise<UInt8>()
    byte.fulfill(200)
    #expect(try byte.result?.get() == 200)

    let optional = CoPromise<Int?>()
    optional.fulfill(nil)
    #expect(try optional.result?.get() == .some(nil))

    let pair = CoPromise<(Int, Int)>()
    pair.fulfill((1, 2))
    let read = try pair.result?.get()
    #expect(read?.0 == 1 && read?.1 == 2)

    let wide = CoPromise<Wide>()
    let expected = Wide(name: String(repeating: "x", count: 40), numbers: [1, 2, 3], flag: true)
    wide.fulfill(expected)
    #expect(try wide.result?.get() == expected)
    #expect(try wide.result?.get() == expected)  // reading twice leaves the box in place
  }

  @Test func aRejectedFutureKeepsItsErrorAndNoValue() throws {
    let promise = CoPromise<Wide>()
    promise.reject(Failure(code: 7))
    promise.fulfill(Wide(name: "late", numbers: [], flag: false))
    #expect(throws: Failure(code: 7)) { try promise.result?.get() }
  }

  @Test func aBoxedValueIsReleasedWithItsFuture() throws {
    let counter = Counter()
    do {
      let promise = CoPromise<Tracked>()
      promise.fulfill(Tracked(5, counter: counter))
      promise.fulfill(Tracked(6, counter: counter))  // ignored, and freed at once
      #expect(counter.count == 1)
      #expect(try promise.result?.get().value == 5)
    }
    #expect(counter.count == 0)
  }

  @Test func aTaskValueIsReleasedWithItsTask() throws {
    let counter = Counter()
    try CoroutineLoop.run {
      let task = co_launch { Tracked(9, counter: counter) }
      let value = try co_await(task).value
      #expect(value == 9)
      let wide = co_launch { Wide(name: "task", numbers: [4, 5], flag: true) }
      let wideValue = try co_await(wide)
      #expect(wideValue == Wide(name: "task", numbers: [4, 5], flag: true))
    }
    #expect(counter.count == 0)
  }

  @Test func aParentWaitingForItsChildrenPublishesItsOwnValue() throws {
    let gate = CoPromise<Void>()
    let parentValue = Mutex<Wide?>(nil)
    try CoroutineLoop.run {
      let parent = co_launch { () -> Wide in
        co_launch { try co_await(gate) }
        return Wide(name: "parent", numbers: [1], flag: false)
      }
      parent.whenComplete { result in parentValue.withLock { $0 = try? result.get() } }
      co_launch {
        try co_delay(0)
        #expect(!parent.isSettled)  // its body returned, its child still waits
        gate.fulfill(())
      }
    }
    #expect(parentValue.withLock { $0 } == Wide(name: "parent", numbers: [1], flag: false))
  }
}
