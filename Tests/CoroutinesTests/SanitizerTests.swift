import CUContext
import Dispatch
import Synchronization
import Testing

@testable import Coroutines

/// Switches that sanitizers must follow: coroutines that change threads, and a coroutine that
/// runs another inline from its own stack. Under `make sanitize` these run with ASan and TSan;
/// in a plain build they check that the values survive every switch.
@Suite struct SanitizerTests {
  @Test func stacksBuiltAndUnmappedWithoutEverRunningAreFine() throws {
    // Under TSan each built slot gets a fiber context, destroyed with the slab: 128 000 contexts
    // that never ran crash TSan unless each is made current before it goes (see
    // cu_san_fiber_destroyed). In a plain build: every slot of every slab builds.
    for _ in 0..<2000 {
      let slab = try #require(cu_stack_slab_new(64 * 1024, 64 * 1024, 64))
      defer { cu_stack_slab_free(slab) }
      let built = (0..<64).filter { cu_stack_slab_fiber(slab, $0) != nil }.count
      #expect(built == 64)
    }
  }

  @Test func coroutineHoppingBetweenThreadsKeepsItsState() throws {
    let queue = DispatchQueue(label: "SanitizerTests.hop")
    let total = try CoroutineLoop.run { () -> Int in
      var sum = 0
      var trail: [Int] = []
      for round in 0..<200 {
        // The frame's state, read and written on each side of every hop.
        let value = try co_await(on: queue) { () -> Int in round }
        trail.append(value)
        sum += value
      }
      return sum + trail.count
    }
    #expect(total == (0..<200).reduce(0, +) + 200)
  }

  @Test func coroutinesResumedFromOtherThreadsSeeTheirValues() throws {
    let queue = DispatchQueue(label: "SanitizerTests.workers", attributes: .concurrent)
    let results = try CoroutineLoop.run { () -> [Int] in
      let tasks = (0..<64).map { index in
        co_launch(on: queue, name: "worker \(index)") { () -> Int in
          var values: [Int] = []
          for step in 0..<8 {
            let promise = CoPromise<Int>()
            DispatchQueue.global().async { promise.fulfill(index * 8 + step) }
            values.append(try co_await(promise))
          }
          return values.reduce(0, +)
        }
      }
      return try tasks.map { try co_await($0) }
    }
    #expect(results == (0..<64).map { index in (0..<8).reduce(0) { $0 + index * 8 + $1 } })
  }

  @Test func coroutineRunsAnotherInlineFromItsOwnStack() throws {
    let handedBack = try CoroutineLoop.run { () -> [Int] in
      let outer = try Coroutine.requireCurrent()
      let produced = Mutex<[Int]>([])
      var inner: Coroutine?
      inner = Coroutine(scheduler: outer.scheduler, name: "inner", stackSize: 128 * 1024) {
        for value in 1...3 {
          produced.withLock { $0.append(value) }
          inner?.handBack()
        }
        return {}
      }
      var outcomes: [Coroutine.Outcome] = []
      while true {
        let outcome = try inner!.runInline()
        outcomes.append(outcome)
        if outcome == .finished { break }
      }
      inner = nil
      #expect(outcomes == [.handedBack, .handedBack, .handedBack, .finished])
      return produced.withLock { $0 }
    }
    #expect(handedBack == [1, 2, 3])
  }
}
