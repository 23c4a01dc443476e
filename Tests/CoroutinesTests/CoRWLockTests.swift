import Dispatch
import Synchronization
import Testing

@testable import Coroutines

/// `CoRWLock`: readers share it, a writer has it alone, and a writer is not starved by readers
/// that keep coming.
@Suite struct CoRWLockTests {
  @Test func readersShareAndWritersExclude() throws {
    let lock = CoRWLock()
    let readers = Occupancy()
    let writers = Occupancy()
    let overlap = Atomic<Int>(0)
    let value = Guarded(0)
    try CoroutineLoop.run {
      let tasks = (0..<20).map { index in
        co_launch(on: index % 2 == 0 ? DispatchQueue.global() : nil) {
          for step in 0..<SyncStress.count(300) {
            if (index + step) % 5 == 0 {
              try lock.withWriteLock {
                writers.enter()
                defer { writers.leave() }
                if readers.current != 0 || writers.current != 1 {
                  overlap.add(1, ordering: .relaxed)
                }
                let seen = value.value
                try co_delay(0)
                value.value = seen + 1
              }
            } else {
              try lock.withReadLock {
                readers.enter()
                defer { readers.leave() }
                if writers.current != 0 { overlap.add(1, ordering: .relaxed) }
                _ = value.value
                try co_delay(0)
              }
            }
          }
        }
      }
      for task in tasks { try co_await(task) }
    }
    #expect(overlap.load(ordering: .relaxed) == 0)
    #expect(writers.highWaterMark == 1)
    #expect(readers.highWaterMark > 1)  // readers did share it
    let writes = (0..<20).reduce(0) { sum, index in
      sum + (0..<SyncStress.count(300)).filter { (index + $0) % 5 == 0 }.count
    }
    #expect(value.value == writes)
  }

  @Test func aWaitingWriterGoesBeforeReadersThatCameAfterIt() throws {
    let log = Guarded<[String]>([])
    try CoroutineLoop.run {
      let lock = CoRWLock()
      let first = co_launch {
        try lock.withReadLock {
          log.value.append("reader 1 in")
          try co_delay(0.02)
          log.value.append("reader 1 out")
        }
      }
      try co_delay(0)
      let writer = co_launch { try lock.withWriteLock { log.value.append("writer") } }
      try co_delay(0)
      let later = (2...4).map { index in
        co_launch { try lock.withReadLock { log.value.append("reader \(index)") } }
      }
      for task in [first, writer] + later { try co_await(task) }
    }
    #expect(
      log.value == ["reader 1 in", "reader 1 out", "writer", "reader 2", "reader 3", "reader 4"])
  }

  @Test func aWriterThatTimesOutLetsTheReadersBehindItIn() {
    let loop = CoroutineTestLoop()
    let lock = CoRWLock()
    let reader = co_launch(on: loop) { try lock.withReadLock { try co_delay(10) } }
    loop.runUntilIdle()
    let writer = co_launch(on: loop) { try lock.withWriteLock(timeout: 1) {} }
    loop.runUntilIdle()
    let secondReader = co_launch(on: loop) { try lock.withReadLock { true } }
    loop.runUntilIdle()
    #expect(secondReader.result == nil)  // queued behind the writer
    loop.advance(by: 1.5)
    #expect(throws: CoroutineError.timedOut) { try writer.result?.get() }
    #expect((try? secondReader.result?.get()) == true)  // shares it with the first reader now
    #expect(reader.result == nil)
    loop.advance(by: 10)
    #expect(reader.result != nil)
  }

  @Test func aWritersReleaseLetsInTogetherEveryReaderQueuedBehindItInArrivalOrder() throws {
    let readers = 2_000
    let entered = Guarded<[Int]>([])
    let inside = Occupancy()
    try CoroutineLoop.run {
      let lock = CoRWLock()
      let writer = co_launch { try lock.withWriteLock { try co_delay(0.02) } }
      try co_delay(0)
      let tasks = (0..<readers).map { index in
        co_launch {
          try lock.withReadLock {
            entered.value.append(index)
            inside.enter()
            defer { inside.leave() }
            try co_delay(0)  // every other reader gets in meanwhile
          }
        }
      }
      for task in [writer] + tasks { try co_await(task) }
    }
    #expect(entered.value == Array(0..<readers))
    #expect(inside.highWaterMark == readers)
  }

  @Test func lockingOutsideACoroutineThrowsNotInCoroutine() {
    let lock = CoRWLock()
    #expect(throws: CoroutineError.notInCoroutine) { try lock.withReadLock {} }
    #expect(throws: CoroutineError.notInCoroutine) { try lock.withWriteLock {} }
  }
}
