import Glibc
import Testing

@testable import Coroutines

/// Each test uses its own stack size, and trims only that size, so the pool counts it reads
/// belong to it alone even while other tests run in parallel (a trim of every size, run by a
/// parallel test, once emptied this suite's pool between its launch and its count).
@Suite struct StackTests {
  @Test func aFinishedCoroutinesStackIsReused() throws {
    let size = 68 * 1024
    try CoroutineLoop.run {
      for _ in 0..<10 {
        try co_launch(stackSize: size) { try co_delay(0) }.await()
        #expect(StackPool.shared.mappedCount(size: size) == 1)
      }
    }
    #expect(StackPool.shared.pooledCount(size: size) == 1)
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }

  @Test func noStackIsLeftMappedOnceEveryCoroutineHasFinished() throws {
    let size = 76 * 1024
    let gate = CoPromise<Void>()
    try CoroutineLoop.run {
      let tasks = (0..<100).map { _ in co_launch(stackSize: size) { try co_await(gate) } }
      try co_delay(0)
      #expect(StackPool.shared.mappedCount(size: size) == 100)  // one each while parked
      gate.fulfill(())
      for task in tasks { try task.await() }
    }
    // Every stack is pooled (ready, or idle until found unused), and nothing else is mapped.
    #expect(StackPool.shared.pooledCount(size: size) == 100)
    #expect(StackPool.shared.mappedCount(size: size) == 100)
    #expect(StackPool.shared.inUseCount(size: size) == 0)
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }

  @Test func stackSizesAreRoundedToWholePages() throws {
    let odd = 80 * 1024 + 1
    _ = try CoroutineLoop.run { try co_launch(stackSize: odd) { 1 }.await() }
    #expect(StackPool.shared.pooledCount(size: 84 * 1024) == 1)
    StackPool.shared.trim(size: 84 * 1024, to: 0)
  }

  @Test func theDefaultsAreDocumented() {
    #expect(CoroutineStack.minimumSize == 64 * 1024)
    #expect(CoroutineStack.defaultSize >= 256 * 1024)
    #expect(CoroutineStack.guardSize == 64 * 1024)
  }

  @Test func aStackAllocationFailureNamesBothCauses() {
    let description = CoroutineError.stackAllocationFailed(size: 262_144, errno: ENOMEM)
      .description
    #expect(description.contains("262144-byte"))
    #expect(description.contains(String(cString: strerror(ENOMEM))))
    #expect(description.contains("out of memory"))
    // The mapping limit binds only where guards split mappings, so it must say where.
    #expect(description.contains("vm.max_map_count"))
    #expect(description.contains("before 6.13"))
    #expect(description.contains("stack: .shared"))
  }

  @Test func statisticsCountLiveCoroutines() throws {
    let gate = CoPromise<Void>()
    try CoroutineLoop.run {
      let task = co_launch { try co_await(gate) }
      try co_delay(0)
      #expect(CoroutineStatistics.current.liveCoroutines >= 2)  // this one and the parked one
      #expect(CoroutineStatistics.current.mappedStacks >= 2)
      gate.fulfill(())
      try task.await()
    }
  }
}
