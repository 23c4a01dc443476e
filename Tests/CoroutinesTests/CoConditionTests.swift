import Dispatch
import Synchronization
import Testing

@testable import Coroutines

/// `CoCondition`: producers and consumers, signal and broadcast, and the mutex held again
/// however a wait ends.
@Suite struct CoConditionTests {
  @Test func consumersTakeEveryItemOfAProducerExactlyOnce() throws {
    let items = 10_000
    let mutex = CoMutex()
    let changed = CoCondition()
    let queue = Guarded<[Int]>([])
    let producing = Guarded(true)
    let taken = Guarded<[Int]>([])
    try CoroutineLoop.run {
      let consumers = (0..<4).map { index in
        co_launch(on: index % 2 == 0 ? DispatchQueue.global() : nil) {
          while true {
            let item: Int? = try mutex.withLock {
              while queue.value.isEmpty && producing.value { try changed.wait(mutex) }
              return queue.value.isEmpty ? nil : queue.value.removeFirst()
            }
            guard let item else { return }
            try mutex.withLock { taken.value.append(item) }
          }
        }
      }
      let producer = co_launch(on: DispatchQueue.global()) {
        for item in 0..<items {
          try mutex.withLock { queue.value.append(item) }
          changed.signal()
          if item % 100 == 0 { try co_delay(0) }
        }
        try mutex.withLock { producing.value = false }
        changed.broadcast()
      }
      try co_await(producer)
      for consumer in consumers { try co_await(consumer) }
    }
    #expect(taken.value.sorted() == Array(0..<items))
  }

  @Test func broadcastWakesEveryWaiterAndSignalOneInOrder() throws {
    let woken = Guarded<[Int]>([])
    try CoroutineLoop.run {
      let mutex = CoMutex()
      let condition = CoCondition()
      let waiters = (0..<4).map { index in
        co_launch {
          try mutex.withLock {
            try condition.wait(mutex)
            woken.value.append(index)
          }
        }
      }
      try co_delay(0)
      condition.signal()
      try co_delay(0)
      #expect(woken.value == [0])
      condition.broadcast()
      for waiter in waiters { try co_await(waiter) }
    }
    #expect(woken.value == [0, 1, 2, 3])
  }

  @Test func aWaitThatTimesOutOrIsCancelledHoldsTheMutexAgain() throws {
    let loop = CoroutineTestLoop()
    let mutex = CoMutex()
    let condition = CoCondition()
    let timedOut = co_launch(on: loop) { () -> Bool in
      try mutex.lock()
      defer { mutex.unlock() }
      do {
        try condition.wait(mutex, timeout: 1)
        return false
      } catch CoroutineError.timedOut {
        return mutex.isHeld(by: try Coroutine.requireCurrent())
      }
    }
    loop.advance(by: 2)
    #expect(try timedOut.result?.get() == true)

    let cancelledHeld = Guarded(false)
    let cancelled = co_launch(on: loop) {
      try mutex.withLock {
        defer { cancelledHeld.value = (try? mutex.isHeld(by: Coroutine.requireCurrent())) == true }
        try condition.wait(mutex)
      }
    }
    // Another coroutine holds the mutex when the cancellation comes: the waiter waits for it.
    let holder = co_launch(on: loop) {
      try mutex.withLock { try co_delay(5) }
    }
    loop.runUntilIdle()
    cancelled.cancel()
    loop.runUntilIdle()
    #expect(cancelled.result == nil)  // waiting for the mutex, through its cancellation
    loop.advance(by: 5)
    #expect(holder.result != nil)
    #expect(throws: CancellationError.self) { try cancelled.result?.get() }
    #expect(cancelledHeld.value)
    #expect(mutex.tryLock())
  }

  @Test func aSignalledWaiterCancelledWhileItWaitsForTheMutexStillGetsIt() {
    let loop = CoroutineTestLoop()
    let mutex = CoMutex()
    let condition = CoCondition()
    let log = Guarded<[String]>([])
    let waiter = co_launch(on: loop) {
      try mutex.withLock {
        try condition.wait(mutex)  // signalled: returns normally, holding the mutex
        log.value.append("relocked")
      }
      try co_delay(0)  // the cancellation arrives here
      log.value.append("not reached")
    }
    let signaller = co_launch(on: loop) {
      try mutex.withLock {
        condition.signal()  // the waiter now waits for the mutex
        try co_delay(1)
        log.value.append("signaller done")
      }
    }
    loop.runUntilIdle()
    waiter.cancel()  // ends its wait for the mutex, which it must wait for again
    loop.runUntilIdle()
    #expect(log.value.isEmpty)
    loop.advance(by: 1)
    #expect(signaller.result != nil)
    #expect(log.value == ["signaller done", "relocked"])
    #expect(throws: CancellationError.self) { try waiter.result?.get() }
    #expect(mutex.tryLock())
  }

  @Test func waitingWithoutHoldingTheMutexThrows() throws {
    try CoroutineLoop.run { () -> Void in
      #expect(throws: CoroutineError.mutexNotHeld) { try CoCondition().wait(CoMutex()) }
    }
    #expect(throws: CoroutineError.notInCoroutine) { try CoCondition().wait(CoMutex()) }
  }
}
