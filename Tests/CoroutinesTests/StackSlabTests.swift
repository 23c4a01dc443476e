import CUContext
import Glibc
import Testing

@testable import Coroutines

/// Stacks mapped in slabs (stack.c and StackPool): a slab's slots are distinct, guarded stacks; a
/// released slot comes back zeroed; finished stacks beyond the pool's capacity stay resident until
/// they are found unused for a whole interval, and a slab is unmapped once none of its stacks is
/// in use or pooled.
@Suite(.serialized) struct StackSlabTests {
  @Test func aSlabsSlotsAreDistinctStacksOfTheAskedSize() throws {
    let page = Int(cu_page_size())
    let slab = try #require(cu_stack_slab_new(64 * 1024, 64 * 1024, 3))
    defer { cu_stack_slab_free(slab) }
    #expect(cu_stack_slab_count(slab) == 3)
    let fibers = try (0..<3).map { try #require(cu_stack_slab_fiber(slab, $0)) }
    var previousTop: UInt = 0
    for (index, fiber) in fibers.enumerated() {
      #expect(cu_fiber_slot(fiber) == index)
      #expect(cu_fiber_slab(fiber) == slab)
      #expect(cu_fiber_stack_size(fiber) >= 64 * 1024)
      let top = UInt(bitPattern: UnsafeRawPointer(fiber))
      // Each stack lies above its own guard, above the previous slot's fiber.
      #expect(top - UInt(cu_fiber_stack_size(fiber)) >= previousTop + UInt(64 * 1024))
      previousTop = top
      // Asking again for a slot in use gives the same fiber, not a new one.
      #expect(cu_stack_slab_fiber(slab, index) == fiber)
      // The stack starts on a page boundary, right above its guard.
      #expect((Int(bitPattern: top) - cu_fiber_stack_size(fiber)) % page == 0)
    }
    #expect(cu_stack_slab_fiber(slab, 3) == nil)
  }

  @Test func aSlabGuardsItsSlotsInFewSystemCallsWhenTakenInOrder() throws {
    let slab = try #require(cu_stack_slab_new(64 * 1024, 64 * 1024, 64))
    defer { cu_stack_slab_free(slab) }
    // The first slot alone, then runs that double: 1, 1, 2, 4, 8, 16, 32 slots.
    _ = try #require(cu_stack_slab_fiber(slab, 0))
    #expect(cu_stack_slab_guard_calls(slab) == 1)
    for index in 1..<64 { _ = try #require(cu_stack_slab_fiber(slab, index)) }
    if cu_stack_guard_runs_work() != 0 {
      #expect(cu_stack_slab_guard_calls(slab) <= 7)
    } else {
      // A kernel that takes no runs (before Linux 6.14), or has no guard markers: one call per
      // slot, after at most one refused run.
      #expect(cu_stack_slab_guard_calls(slab) <= 65)
    }
    // Rebuilding released slots needs no guard: theirs stayed.
    let fibers = try (0..<64).map { try #require(cu_stack_slab_fiber(slab, $0)) }
    fibers.withUnsafeBufferPointer { cu_stack_release_fibers($0.baseAddress!, $0.count) }
    let calls = cu_stack_slab_guard_calls(slab)
    for index in 0..<64 { _ = try #require(cu_stack_slab_fiber(slab, index)) }
    #expect(cu_stack_slab_guard_calls(slab) == calls)
  }

  @Test func releasedSlotsOfSeveralSlabsComeBackZeroed() throws {
    let first = try #require(cu_stack_slab_new(64 * 1024, 64 * 1024, 3))
    let second = try #require(cu_stack_slab_new(64 * 1024, 64 * 1024, 2))
    defer {
      cu_stack_slab_free(first)
      cu_stack_slab_free(second)
    }
    // Two neighbours (merged into one range), a lone slot, and one of another slab.
    let fibers = try [(first, 0), (first, 1), (second, 1)].map { slab, index in
      try #require(cu_stack_slab_fiber(slab, index))
    }
    let kept = try #require(cu_stack_slab_fiber(first, 2))
    for fiber in fibers + [kept] {
      // Stand in for a finished coroutine's frames: bytes just below the fiber.
      (UnsafeMutableRawPointer(fiber) - 4096).initializeMemory(
        as: UInt8.self, repeating: 0xAB, count: 4096)
    }
    fibers.withUnsafeBufferPointer { cu_stack_release_fibers($0.baseAddress!, $0.count) }
    let rebuilt = try [(first, 0), (first, 1), (second, 1)].map { slab, index in
      try #require(cu_stack_slab_fiber(slab, index))
    }
    #expect(rebuilt == fibers)
    for fiber in rebuilt {
      let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(fiber) - 4096, count: 4096)
      #expect(bytes.allSatisfy { $0 == 0 })
      #expect(cu_fiber_stack_size(fiber) >= 64 * 1024)
    }
    let untouched = UnsafeRawBufferPointer(start: UnsafeRawPointer(kept) - 4096, count: 4096)
    #expect(untouched.allSatisfy { $0 == 0xAB })
  }

  @Test func finishedStacksBeyondThePoolStayResidentUntilUnusedForAWholeInterval() throws {
    let size = 112 * 1024  // a size no other test uses, so the pool's counts for it are ours
    let count = StackPool.slotsPerSlab(size: size) + CoroutineStack.poolCapacity * 2 + 10
    try runAndFinish(count, size: size)
    // Every finished stack is pooled, and none has given its memory back yet.
    #expect(StackPool.shared.pooledCount(size: size) == count)
    #expect(StackPool.shared.mappedCount(size: size) == count)
    #expect(StackPool.shared.inUseCount(size: size) == 0)
    // The pool's look at the end of each interval, made here rather than waited for. At the
    // first, only the stack that was idle when the interval began has been unused throughout.
    let first = try #require(StackPool.shared.idleIntervalDeadline(size: size))
    StackPool.shared.releaseUnusedIdleStacks(size: size, at: first)
    #expect(StackPool.shared.mappedCount(size: size) == count - 1)
    let second = try #require(StackPool.shared.idleIntervalDeadline(size: size))
    #expect(second == first + IdleStackDecay.interval)
    StackPool.shared.releaseUnusedIdleStacks(size: size, at: second)
    let pooled = StackPool.shared.pooledCount(size: size)
    #expect(pooled >= CoroutineStack.poolCapacity)
    #expect(pooled <= 2 * CoroutineStack.poolCapacity)
    #expect(StackPool.shared.mappedCount(size: size) == pooled)
    #expect(StackPool.shared.idleIntervalDeadline(size: size) == nil)
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }

  @Test func idleStacksTakenAgainDuringTheIntervalAreNotReleased() throws {
    let size = TestStacks.uniqueSize()
    let capacity = CoroutineStack.poolCapacity
    try runAndFinish(capacity + 300, size: size)
    let deadline = try #require(StackPool.shared.idleIntervalDeadline(size: size))
    // The load comes back for as many stacks as went idle: the pool serves them all from what
    // it kept, and none is built again.
    try runAndFinish(capacity + 300, size: size)
    #expect(StackPool.shared.mappedCount(size: size) == capacity + 300)
    StackPool.shared.releaseUnusedIdleStacks(size: size, at: deadline)
    #expect(StackPool.shared.mappedCount(size: size) == capacity + 300)
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }

  @Test func aBurstsIdleStacksGoBackWithNoFurtherLaunch() throws {
    let size = TestStacks.uniqueSize()
    let capacity = CoroutineStack.poolCapacity
    try runAndFinish(capacity * 2 + 200, size: size)
    #expect(StackPool.shared.mappedCount(size: size) == capacity * 2 + 200)
    // Nothing launches or finishes on this size any more: the pool's own timer gives the
    // memory back, within two intervals. Waited for with a loop's timer, for at most ten.
    try CoroutineLoop.run {
      var waited = 0.0
      while StackPool.shared.mappedCount(size: size) > 2 * capacity, waited < 10 {
        try co_delay(0.1)
        waited += 0.1
      }
    }
    #expect(StackPool.shared.mappedCount(size: size) <= 2 * capacity)
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }

  /// Runs `count` coroutines with stacks of `size` at once, parked until all have started, and
  /// returns once they have finished.
  private func runAndFinish(_ count: Int, size: Int) throws {
    let gate = CoPromise<Void>()
    try CoroutineLoop.run {
      let tasks = (0..<count).map { _ in co_launch(stackSize: size) { try co_await(gate) } }
      try co_delay(0)
      #expect(StackPool.shared.inUseCount(size: size) == count)
      gate.fulfill(())
      for task in tasks { try task.await() }
    }
  }

  @Test func coroutinesRunCorrectlyOnReleasedAndReusedSlots() throws {
    let size = 116 * 1024  // a size no other test uses
    let keeper = CoPromise<Void>()
    try CoroutineLoop.run {
      // One coroutine keeps the slab mapped while the others' slots are released under it.
      let held = co_launch(stackSize: size) { try co_await(keeper) }
      for round in 0..<3 {
        let sums = (0..<20).map { seed in
          co_launch(stackSize: size) { () throws -> Int in
            try co_delay(0)
            return deepSum(seed &+ round, depth: 200)
          }
        }
        for (seed, task) in sums.enumerated() {
          #expect(try task.await() == deepSum(seed &+ round, depth: 200))
        }
        StackPool.shared.trim(size: size, to: 0)
        #expect(StackPool.shared.mappedCount(size: size) == 1)
      }
      keeper.fulfill(())
      try held.await()
    }
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }
}

/// A recursion that keeps a frame's worth of data on the stack at every level.
@inline(never)
private func deepSum(_ seed: Int, depth: Int) -> Int {
  var local = (seed, seed &* 3, seed &* 7, seed &* 11)
  if depth == 0 { return local.0 &+ local.1 &+ local.2 &+ local.3 }
  let below = deepSum(seed &+ 1, depth: depth - 1)
  withUnsafeMutableBytes(of: &local) { $0[0] ^= 0 }
  return below &+ local.0 &+ local.3
}
