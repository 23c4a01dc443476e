import Dispatch
import Testing

@testable import Coroutines

/// Coroutines on shared stacks: their frames leave and come back, byte for byte, while others
/// run at the same addresses.
@Suite struct SharedStackTests {
  /// Suspends the current coroutine until its loop has run the jobs queued before this one.
  private func yieldToLoop(_ loop: CoroutineLoop) throws {
    let _: Void = try co_await { done in loop.schedule { done(.success(())) } }
  }

  /// Recurses `depth` frames, each holding values derived from `seed`, yields at the bottom
  /// `rounds` times, and checks every frame's values on the way back up.
  private func deepFrames(_ depth: Int, seed: Int, rounds: Int, loop: CoroutineLoop) throws -> Int {
    let local = (0..<8).map { seed &* 31 &+ depth &* 7 &+ $0 }
    var below = 0
    if depth > 0 {
      below = try deepFrames(depth - 1, seed: seed, rounds: rounds, loop: loop)
    } else {
      for _ in 0..<rounds { try yieldToLoop(loop) }
    }
    #expect(local == (0..<8).map { seed &* 31 &+ depth &* 7 &+ $0 })
    return below &+ local.reduce(0, &+)
  }

  private func expectedFrames(_ depth: Int, seed: Int) -> Int {
    (0...depth).reduce(0) { sum, level in
      sum &+ (0..<8).map { seed &* 31 &+ level &* 7 &+ $0 }.reduce(0, &+)
    }
  }

  @Test func manyCoroutinesTakeTurnsOnAFewStacksAndKeepTheirFrames() throws {
    let count = 40
    let (results, stacks) = try CoroutineLoop.run { () -> ([Int], Int) in
      let loop = try #require(CoroutineLoop.current)
      let tasks = (0..<count).map { index in
        co_launch(stack: .shared) { () -> Int in
          try deepFrames(index % 13 * 5, seed: index, rounds: 10, loop: loop)
        }
      }
      return (try tasks.map { try $0.await() }, loop.sharedStacks.count)
    }
    #expect(results == (0..<count).map { expectedFrames($0 % 13 * 5, seed: $0) })
    #expect(stacks == SharedStackSet.stacksPerSize)
  }

  /// The awaited value is delivered while another coroutine runs on the same stack addresses:
  /// it must not land in them.
  @Test func aResultDeliveredWhileAnotherCoroutineHoldsTheStackArrivesIntact() throws {
    let size = 96 * 1024  // a size no other test uses: a fresh ring, so the stacks are known
    let (received, checked) = try CoroutineLoop.run { () -> ([Int], Bool) in
      let promise = CoPromise<[Int]>()
      let waiter = co_launch(stackSize: size, stack: .shared) { try co_await(promise) }
      for _ in 1..<SharedStackSet.stacksPerSize {
        co_launch(stackSize: size, stack: .shared) {}
      }
      // The next shared coroutine of this size starts on the waiter's stack, over its frames.
      let scribbler = co_launch(stackSize: size, stack: .shared) { () -> Bool in
        var scratch = [Int](repeating: 0, count: 16)
        withUnsafeMutableBytes(of: &scratch) { _ in }
        let filler = (0..<256).map { $0 &* 0x5151 }
        promise.fulfill(Array(0..<64))
        return filler == (0..<256).map { $0 &* 0x5151 }
      }
      return (try waiter.await(), try scribbler.await())
    }
    #expect(received == Array(0..<64))
    #expect(checked)
  }

  @Test func aParkedCoroutineKeepsOnlyTheBytesItUses() throws {
    let count = 200
    let saved = try CoroutineLoop.run { () -> [Int] in
      let loop = try #require(CoroutineLoop.current)
      let gate = CoPromise<Void>()
      let tasks = (0..<count).map { _ in co_launch(stack: .shared) { try co_await(gate) } }
      try yieldToLoop(loop)  // every coroutine has started and parked by now
      let saved = tasks.map { $0.coroutine.savedStackBytes }
      gate.fulfill(())
      for task in tasks { try task.await() }
      return saved
    }
    let outOfPlace = saved.filter { $0 > 0 }
    // Each stack's last occupant keeps its frames in place; every other coroutine was copied out.
    #expect(outOfPlace.count >= count - SharedStackSet.stacksPerSize)
    #expect(outOfPlace.allSatisfy { $0 < 16 * 1024 })
  }

  @Test func tenThousandParkedCoroutinesUseNoDedicatedStack() throws {
    let size = 72 * 1024  // a size no other test uses, so the pool's count for it is ours
    let count = 10_000
    let total = try CoroutineLoop.run { () -> Int in
      let loop = try #require(CoroutineLoop.current)
      let gate = CoPromise<Int>()
      let tasks = (0..<count).map { index in
        co_launch(stackSize: size, stack: .shared) { try co_await(gate) + index }
      }
      try yieldToLoop(loop)
      gate.fulfill(1)
      return try tasks.reduce(0) { $0 + (try $1.await()) }
    }
    #expect(total == count + count * (count - 1) / 2)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }

  @Test func aSharedStackCoroutineCannotMoveToAnotherScheduler() throws {
    #expect(throws: CoroutineError.sharedStackCannotMove) {
      try CoroutineLoop.run {
        try co_launch(stack: .shared) { try co_await(on: DispatchQueue.global()) { 1 } }.await()
      }
    }
  }

  @Test func cancellingAParkedSharedCoroutineUnwindsIt() throws {
    let log = Log()
    #expect(throws: CancellationError.self) {
      try CoroutineLoop.run {
        let loop = try #require(CoroutineLoop.current)
        let parked = co_launch(stack: .shared) {
          defer { log.append(1) }
          try co_await(CoPromise<Void>())
        }
        co_launch(stack: .shared) { log.append(0) }  // takes a turn on the stacks meanwhile
        try yieldToLoop(loop)
        parked.cancel()
        try parked.await()
      }
    }
    #expect(log.values == [0, 1])
  }
}
