import CUContext
import Glibc
import Testing

@testable import Coroutines

/// Stacks mapped in slabs (stack.c and StackPool): a slab's slots are distinct, guarded stacks; a
/// released slot comes back zeroed; the pool keeps at most twice its capacity of finished stacks
/// and unmaps a slab once every stack of it has finished.
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

  /// Whether the page holding `address` is resident (mincore).
  private func isResident(_ address: UInt) -> Bool {
    let page = UInt(cu_page_size())
    var flag: UInt8 = 0
    let start = UnsafeMutableRawPointer(bitPattern: address / page * page)
    return mincore(start, Int(page), &flag) == 0 && flag & 1 == 1
  }

  @Test func preparedSlotsAreResidentAtTheTopAndBuildLikeFreshOnes() throws {
    let slab = try #require(cu_stack_slab_new(64 * 1024, 64 * 1024, 8))
    defer { cu_stack_slab_free(slab) }
    let first = try #require(cu_stack_slab_fiber(slab, 0))
    let second = try #require(cu_stack_slab_fiber(slab, 1))
    let stride =
      UInt(bitPattern: UnsafeRawPointer(second)) - UInt(bitPattern: UnsafeRawPointer(first))
    let fiberAddress = { (index: Int) in
      UInt(bitPattern: UnsafeRawPointer(first)) + UInt(index) * stride
    }
    // A range that starts on a slot already built (left as it is) and runs past the slab's end.
    cu_stack_slab_prepare(slab, 1, 4)
    cu_stack_slab_prepare(slab, 7, 5)
    var uname = utsname()
    _ = Glibc.uname(&uname)
    let release = withUnsafeBytes(of: uname.release) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    let version = release.split(separator: ".").prefix(2).compactMap { Int($0) }
    // process_madvise on the calling process, which the batch needs, came with Linux 6.14.
    if version.count == 2, version[0] > 6 || (version[0] == 6 && version[1] >= 14) {
      for index in [2, 3, 4, 7] { #expect(isResident(fiberAddress(index)), "slot \(index)") }
    }
    #expect(!isResident(fiberAddress(5)) && !isResident(fiberAddress(6)))
    #expect(try #require(cu_stack_slab_fiber(slab, 1)) == second)
    for index in 2..<8 {
      let fiber = try #require(cu_stack_slab_fiber(slab, index))
      #expect(UInt(bitPattern: UnsafeRawPointer(fiber)) == fiberAddress(index))
      #expect(cu_fiber_stack_size(fiber) >= 64 * 1024)
      // The page just below the record is the stack's first, zeroed like any fresh page.
      let below = UnsafeRawBufferPointer(start: UnsafeRawPointer(fiber) - 256, count: 256)
      #expect(below.allSatisfy { $0 == 0 })
    }
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

  @Test func finishedStacksBeyondThePoolAreReleasedAndEmptySlabsUnmapped() throws {
    let size = 112 * 1024  // a size no other test uses, so the pool's counts for it are ours
    let count = StackPool.slotsPerSlab(size: size) + CoroutineStack.poolCapacity * 2 + 10
    let gate = CoPromise<Void>()
    try CoroutineLoop.run {
      let tasks = (0..<count).map { _ in co_launch(stackSize: size) { try co_await(gate) } }
      try co_delay(0)
      #expect(StackPool.shared.mappedCount(size: size) == count)
      #expect(StackPool.shared.inUseCount(size: size) == count)
      gate.fulfill(())
      for task in tasks { try task.await() }
    }
    let pooled = StackPool.shared.pooledCount(size: size)
    #expect(pooled >= min(count, CoroutineStack.poolCapacity))
    #expect(pooled <= 2 * CoroutineStack.poolCapacity)
    #expect(StackPool.shared.mappedCount(size: size) == pooled)
    #expect(StackPool.shared.inUseCount(size: size) == 0)
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
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
