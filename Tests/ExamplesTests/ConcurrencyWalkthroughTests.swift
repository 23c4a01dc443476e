import Dispatch
import Synchronization
import Testing

@testable import Coroutines
@testable import ExamplesKit

@Suite struct ConcurrencyWalkthroughTests {
  static func configuration() -> ConcurrencyWalkthrough.Configuration {
    var configuration = ConcurrencyWalkthrough.Configuration()
    configuration.sizes = [3, 20]
    configuration.waitsPerTask = 2
    configuration.threadCap = 10
    return configuration
  }

  @Test func coroutinesShareOneThreadAndThreadsTakeOneEach() throws {
    let rows = try ConcurrencyWalkthrough.run(Self.configuration(), narrator: .silent())
    #expect(rows.map(\.tasks) == [3, 20])
    for row in rows {
      #expect(row.coroutines.completedTasks == row.tasks)
      #expect(row.coroutines.threads == 1)
      #expect(row.sharedStacks.completedTasks == row.tasks)
      #expect(row.sharedStacks.threads == 1)
    }
    let threads = try rows[0].threads.get()
    #expect(threads.completedTasks == 3)
    #expect(threads.threads == 3)
  }

  @Test func theThreadSideStopsAtItsCap() throws {
    let rows = try ConcurrencyWalkthrough.run(Self.configuration(), narrator: .silent())
    #expect(throws: ConcurrencyWalkthrough.DidNotRun.self) { try rows[1].threads.get() }
    let table = ConcurrencyWalkthrough.table(rows, Self.configuration())
    #expect(table.contains { $0.contains("did not run: over the 10-thread cap") })
  }

  /// The shared-stack side maps no stack of the row's size: its coroutines park their frames
  /// in heap buffers. (Only the absence is asserted: another suite may drain the stack pool.)
  @Test func theSharedStackSideMapsNoStackPerTask() throws {
    var configuration = Self.configuration()
    configuration.stackSize = 200 * 1024  // a size no other test uses
    let measurement = try ConcurrencyWalkthrough.measureCoroutines(
      20, configuration, stack: .shared)
    #expect(measurement.completedTasks == 20)
    #expect(StackPool.shared.mappedCount(size: configuration.stackSize) == 0)
  }

  @Test func theTableShowsBothKindsOfStackBesideTheThreads() throws {
    let rows = try ConcurrencyWalkthrough.run(Self.configuration(), narrator: .silent())
    let table = ConcurrencyWalkthrough.table(rows, Self.configuration())
    #expect(table[0].contains("| coroutines "))
    #expect(table[0].contains("| coroutines, shared stacks "))
    #expect(table[0].hasSuffix("| threads"))
    let row = try #require(table.first { $0.hasPrefix("        3 |") })
    #expect(row.split(separator: "|").count == 4)
  }

  /// Thousands of coroutines woken by their loop's timers, and a thread side capped at zero.
  @Test func thousandsOfCoroutinesAllFinish() throws {
    var configuration = ConcurrencyWalkthrough.Configuration()
    configuration.sizes = [2_000]
    configuration.waitsPerTask = 3
    configuration.threadCap = 0
    let rows = try ConcurrencyWalkthrough.run(configuration, narrator: .silent())
    #expect(rows[0].coroutines.completedTasks == 2_000)
    #expect(rows[0].coroutines.threads == 1)
    #expect(throws: ConcurrencyWalkthrough.DidNotRun.self) { try rows[0].threads.get() }
  }

  @Test func aCoroutinesRequestIsAnsweredOnItsOwnLoopAfterTheLatency() throws {
    let device = SimulatedDevice(latency: 0.002)
    let answers = try CoroutineLoop.run { () -> [(onLoop: Bool, waited: UInt64)] in
      let loop = CoroutineLoop.current
      return try (0..<3).map { _ in
        let start = DispatchTime.now().uptimeNanoseconds
        let returned = Atomic<Bool>(false)
        let answeredOnLoop: Bool = try co_await { done in
          device.request {
            // After `request` returned, from a timer of the requesting coroutine's loop.
            let onLoop = returned.load(ordering: .relaxed) && CoroutineLoop.current === loop
            done(.success(onLoop))
          }
          returned.store(true, ordering: .relaxed)
        }
        return (answeredOnLoop, DispatchTime.now().uptimeNanoseconds - start)
      }
    }
    #expect(answers.allSatisfy { $0.onLoop })
    #expect(answers.allSatisfy { $0.waited >= 2_000_000 })
    #expect(device.requestCount == 3)
  }

  /// The walkthrough's wait: the coroutine sleeps in its loop's timer heap, which wakes it
  /// itself, rather than through a timer object whose job then wakes it.
  @Test func aCoroutineWaitsForTheDeviceInItsLoopsTimerHeap() throws {
    let device = SimulatedDevice(latency: 0.002)
    let (sleeps, timers, waited) = try CoroutineLoop.run { () -> (Int, Int, UInt64) in
      let loop = CoroutineLoop.current!
      let start = DispatchTime.now().uptimeNanoseconds
      let waiters = (0..<3).map { _ in co_launch { try device.awaitRequest() } }
      try co_delay(0)  // every waiter has started and is waiting for the device
      let counts = (loop.pendingSleepsForTesting, loop.pendingTimersForTesting)
      for waiter in waiters { try co_await(waiter) }
      return (counts.0, counts.1, DispatchTime.now().uptimeNanoseconds - start)
    }
    #expect(sleeps == 3)
    #expect(timers == 0)
    #expect(waited >= 2_000_000)
    #expect(device.requestCount == 3)
  }

  @Test func aRequestOffAnyLoopIsAnsweredFromAnotherThread() {
    let device = SimulatedDevice(latency: 0)
    let answered = DispatchSemaphore(value: 0)
    let onALoop = Atomic<Bool>(true)
    device.request {
      onALoop.store(CoroutineLoop.current != nil, ordering: .relaxed)
      answered.signal()
    }
    answered.wait()
    let answeredOnALoop = onALoop.load(ordering: .relaxed)
    #expect(!answeredOnALoop)
  }

  @Test func everyWaitReachesTheDevice() {
    let device = SimulatedDevice(latency: 0)
    let result = ThreadRunner.run(count: 4, stackSize: 256 * 1024) { _ in device.blockingRequest() }
    #expect(result.started == 4)
    #expect(result.refusal == nil)
    #expect(device.requestCount == 4)
  }

  @Test func largeNumbersAreGroupedByThousands() {
    #expect(ConcurrencyWalkthrough.grouped(10_000) == "10 000")
    #expect(ConcurrencyWalkthrough.grouped(999) == "999")
    #expect(ConcurrencyWalkthrough.grouped(1_000_000) == "1 000 000")
  }
}
