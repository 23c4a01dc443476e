import Dispatch
import Foundation
import Testing

@testable import Coroutines

/// `ShortLock` is the one-word lock under every channel and `co_select`: it must exclude, and
/// a thread that found it held must get it once it is released, however long it slept.
@Suite struct ShortLockTests {
  final class Counter: @unchecked Sendable {  // guarded by the lock under test
    var value = 0
  }

  @Test func excludesAcrossThreads() {
    let lock = ShortLock()
    let counter = Counter()
    let threads = 4
    let rounds = 50_000
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
      for _ in 0..<rounds {
        lock.lock()
        counter.value += 1
        lock.unlock()
      }
    }
    #expect(counter.value == threads * rounds)
  }

  @Test func aWaiterThatFellAsleepGetsTheLockWhenItIsReleased() {
    let lock = ShortLock()
    let counter = Counter()
    let waiterArrived = DispatchSemaphore(value: 0)
    let waiterDone = DispatchSemaphore(value: 0)
    lock.lock()
    Thread.detachNewThread {
      waiterArrived.signal()
      lock.withLock { counter.value += 1 }  // spins, then sleeps on the futex
      waiterDone.signal()
    }
    waiterArrived.wait()
    // Whether the waiter is still spinning or already asleep, it cannot get in while held.
    #expect(waiterDone.wait(timeout: .now() + .milliseconds(20)) == .timedOut)
    #expect(counter.value == 0)
    lock.unlock()
    waiterDone.wait()
    #expect(lock.withLock { counter.value } == 1)
  }
}
