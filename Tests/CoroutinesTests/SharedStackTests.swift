import CUContext
import Dispatch
import Foundation
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
  private func deepFrames(
    _ depth: Int, seed: Int, rounds: Int, loop: CoroutineLoop, atTheBottom: () throws -> Void = {}
  ) throws -> Int {
    let local = (0..<8).map { seed &* 31 &+ depth &* 7 &+ $0 }
    var below = 0
    if depth > 0 {
      below = try deepFrames(
        depth - 1, seed: seed, rounds: rounds, loop: loop, atTheBottom: atTheBottom)
    } else {
      for _ in 0..<rounds { try yieldToLoop(loop) }
      try atTheBottom()
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

  /// A parked coroutine keeps only a few registers of its switch context, beside its stack
  /// bytes: the callee-saved ones, where it returns to, its floating-point control words and (for
  /// swapcontext) its signal mask. Many coroutines with deep frames and their own rounding modes
  /// take turns on one stack, often more than once in a row (resumed in place), and some finish
  /// and are followed by new ones starting on the same stack while others stay parked.
  @Test func coroutinesAlternatingOnOneStackKeepTheirFramesAndRoundingModes() throws {
    let size = 88 * 1024  // a size no other test uses: a fresh ring of stacks
    let count = 3 * SharedStackSet.stacksPerSize + 1  // several coroutines per stack
    let modes: [Int32] = [FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO, FE_TONEAREST]
    let outcomes = try CoroutineLoop.run { () -> [[Int]] in
      let loop = try #require(CoroutineLoop.current)
      let tasks = (0..<2 * count).map { index in
        co_launch(stackSize: size, stack: .shared) { () -> [Int] in
          let mode = modes[index % modes.count]
          fesetround(mode)
          defer { fesetround(FE_TONEAREST) }
          // Half finish early, so newcomers start on stacks whose other coroutines are parked.
          let rounds = index < count ? 3 + index % 4 : 9
          var seen: [Int] = []
          let sum = try deepFrames(index % 7 * 4 + 3, seed: index, rounds: 1, loop: loop) {
            for _ in 0..<rounds {
              try yieldToLoop(loop)
              seen.append(Int(fegetround()))
            }
          }
          return [sum] + seen
        }
      }
      return try tasks.map { try $0.await() }
    }
    for (index, outcome) in outcomes.enumerated() {
      let rounds = index < count ? 3 + index % 4 : 9
      let mode = Int(modes[index % modes.count])
      #expect(
        outcome == [expectedFrames(index % 7 * 4 + 3, seed: index)]
          + Array(repeating: mode, count: rounds))
    }
  }

  /// With swapcontext, a coroutine's signal mask is part of its context: it must come back with
  /// the coroutine after others ran on the same stack, and must not leak to a coroutine that
  /// starts there. (The register-only switch leaves the mask to the thread, as Internals says.)
  @Test func aParkedCoroutinesSignalMaskComesBackWithItOnTheUcontextBackend() throws {
    guard CoroutineBackend.current == .ucontext else { return }
    let size = 84 * 1024  // a size no other test uses: a fresh ring of stacks
    func blocked(_ signal: Int32) -> Bool {
      var current = sigset_t()
      pthread_sigmask(SIG_BLOCK, nil, &current)
      return sigismember(&current, signal) == 1
    }
    // The blocker flips SIGUSR2 in its own mask (Dispatch's threads block it, others may not).
    let outside = blocked(SIGUSR2)
    let (inside, others) = try CoroutineLoop.run { () -> ([Bool], [Bool]) in
      let loop = try #require(CoroutineLoop.current)
      let blocker = co_launch(stackSize: size, stack: .shared) { () -> [Bool] in
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGUSR2)
        pthread_sigmask(outside ? SIG_UNBLOCK : SIG_BLOCK, &set, nil)
        defer { pthread_sigmask(outside ? SIG_BLOCK : SIG_UNBLOCK, &set, nil) }
        var seen: [Bool] = []
        for _ in 0..<3 {
          try yieldToLoop(loop)
          seen.append(blocked(SIGUSR2))
        }
        return seen
      }
      // Enough others to take every stack of the ring, the blocker's included, between its turns.
      let others = (0..<2 * SharedStackSet.stacksPerSize).map { _ in
        co_launch(stackSize: size, stack: .shared) { () -> [Bool] in
          var seen = [blocked(SIGUSR2)]
          for _ in 0..<3 {
            try yieldToLoop(loop)
            seen.append(blocked(SIGUSR2))
          }
          return seen
        }
      }
      return (try blocker.await(), try others.flatMap { try $0.await() })
    }
    #expect(inside == [!outside, !outside, !outside])
    #expect(others.allSatisfy { $0 == outside })
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

  /// Coroutines parked at the same await have frames of the same depth that differ in a few
  /// words (their own objects' addresses): all but the first on each stack keep only those.
  @Test func coroutinesParkedAtOneAwaitKeepOnlyWhatDiffersFromTheirStacksImage() throws {
    let size = 76 * 1024  // a size no other test uses: a fresh ring of stacks
    let threshold = Int(CU_SHARED_DELTA_MIN_FIBERS)
    let count = 2 * threshold * SharedStackSet.stacksPerSize
    let (saved, results) = try CoroutineLoop.run { () -> ([Int], [Int]) in
      let loop = try #require(CoroutineLoop.current)
      let gate = CoPromise<Int>()
      let tasks = (0..<count).map { index in
        co_launch(stackSize: size, stack: .shared) { try co_await(gate) &* 3 &+ index }
      }
      try yieldToLoop(loop)  // every coroutine has started and parked by now
      let saved = tasks.map { $0.coroutine.savedStackBytes }
      gate.fulfill(7)
      return (saved, try tasks.map { try $0.await() })
    }
    #expect(results == (0..<count).map { 21 + $0 })
    let whole = try #require(saved.max())
    // Whole copies while a stack carries fewer fibers than the threshold (fibers are made as
    // coroutines start), and one occupant per stack in place; differences for all the others.
    let small = saved.filter { $0 > 0 && $0 <= whole / 2 + 8 }
    #expect(small.count >= count - (threshold + 1) * SharedStackSet.stacksPerSize)
  }

  /// A stack carrying a few fibers stores each parking whole: the differences would save little
  /// memory there and cost time at every switch.
  @Test func aFewCoroutinesOnAStackKeepWholeCopies() throws {
    let size = 88 * 1024  // a size no other test uses: a fresh ring of stacks
    let count = 3 * SharedStackSet.stacksPerSize
    let saved = try CoroutineLoop.run { () -> [Int] in
      let loop = try #require(CoroutineLoop.current)
      let gate = CoPromise<Int>()
      let tasks = (0..<count).map { index in
        co_launch(stackSize: size, stack: .shared) { try co_await(gate) &+ index }
      }
      try yieldToLoop(loop)
      let saved = tasks.map { $0.coroutine.savedStackBytes }
      gate.fulfill(1)
      for (index, task) in tasks.enumerated() { #expect(try task.await() == 1 + index) }
      return saved
    }
    let parked = saved.filter { $0 > 0 }
    #expect(parked.count == count - SharedStackSet.stacksPerSize)  // all but the occupants
    #expect(Set(parked).count == 1)  // the same depth, stored whole every time
  }

  /// 64 words, and 1 024 words (8 KiB) in one local value: most of a frame.
  private typealias Block = (
    (Int, Int, Int, Int, Int, Int, Int, Int), (Int, Int, Int, Int, Int, Int, Int, Int),
    (Int, Int, Int, Int, Int, Int, Int, Int), (Int, Int, Int, Int, Int, Int, Int, Int),
    (Int, Int, Int, Int, Int, Int, Int, Int), (Int, Int, Int, Int, Int, Int, Int, Int),
    (Int, Int, Int, Int, Int, Int, Int, Int), (Int, Int, Int, Int, Int, Int, Int, Int)
  )
  private typealias Words = (
    Block, Block, Block, Block, Block, Block, Block, Block,
    Block, Block, Block, Block, Block, Block, Block, Block
  )

  /// Frames of the same depth that differ in most words replace the stack's image for that
  /// depth, and more depths than a stack keeps images for take turns; coroutines stored against
  /// an image the stack has since let go of still come back intact.
  @Test func parkedFramesSurviveWhenTheirStacksImagesChange() throws {
    let size = 80 * 1024  // a size no other test uses: a fresh ring of stacks
    let stacks = SharedStackSet.stacksPerSize
    let count = 16 * stacks
    let wordCount = MemoryLayout<Words>.size / MemoryLayout<Int>.size
    // Coroutine i runs on stack i % stacks; each stack sees each of 8 patterns twice in a row
    // (i and i + stacks), at these depths: patterns 3, 6 and 7 find an image of their depth with
    // other words, and pattern 5 a fifth depth (a stack keeps images for four).
    func pattern(_ index: Int) -> Int { index / stacks / 2 }
    func depth(_ index: Int) -> Int { [0, 1, 2, 0, 3, 4, 1, 2][pattern(index)] }
    func expected(_ index: Int, _ word: Int) -> Int {
      word == 0 ? index : pattern(index) &* 1_000_003 &+ word
    }
    func descend(_ levels: Int, _ index: Int, _ loop: CoroutineLoop) throws -> Bool {
      if levels > 0 { return try descend(levels - 1, index, loop) }
      let heap = UnsafeMutablePointer<Words>.allocate(capacity: 1)
      heap.withMemoryRebound(to: Int.self, capacity: wordCount) { words in
        for word in 0..<wordCount { words[word] = expected(index, word) }
      }
      var words = heap.move()  // in this frame, on the shared stack
      heap.deallocate()
      for _ in 0..<5 { try yieldToLoop(loop) }
      return withUnsafeBytes(of: &words) { bytes in
        (0..<wordCount).allSatisfy {
          bytes.load(fromByteOffset: $0 * MemoryLayout<Int>.size, as: Int.self)
            == expected(index, $0)
        }
      }
    }
    let (results, saved) = try CoroutineLoop.run { () -> ([Bool], [Int]) in
      let loop = try #require(CoroutineLoop.current)
      // Enough coroutines parked on every stack first for it to store differences at all; a
      // multiple of `stacks`, so coroutine i still runs on stack i % stacks.
      let gate = CoPromise<Void>()
      let fillers = (0..<Int(CU_SHARED_DELTA_MIN_FIBERS) * stacks).map { _ in
        co_launch(stackSize: size, stack: .shared) { try co_await(gate) }
      }
      defer {
        gate.fulfill(())
        for filler in fillers { _ = try? filler.await() }
      }
      let tasks = (0..<count).map { index in
        co_launch(stackSize: size, stack: .shared) { try descend(depth(index), index, loop) }
      }
      try yieldToLoop(loop)  // every coroutine has parked by now
      let saved = tasks.map { $0.coroutine.savedStackBytes }
      return (try tasks.map { try $0.await() }, saved)
    }
    #expect(results == Array(repeating: true, count: count))
    // The first of each pair on a stack is stored whole (no image of its depth, or one with
    // other words) and becomes the image the second is stored against. (Under AddressSanitizer
    // frames are laid out otherwise, a large local may live on the sanitizer's fake stack, and
    // only the outcome counts. Asked of the process, not guessed from the sizes: a guess from
    // the sizes broke when ASan's frames alone grew past the local's size.)
    let underAddressSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
    for first in (0..<count).filter({ !underAddressSanitizer && $0 / stacks % 2 == 0 }) {
      #expect(saved[first] > MemoryLayout<Words>.size)
      let second = saved[first + stacks]
      #expect(second == 0 || second < saved[first] / 4, "coroutine \(first + stacks)")
    }
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
