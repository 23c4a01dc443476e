import Foundation
import Synchronization

@testable import Coroutines

/// A stack size that no other test uses, so the pool's per-size counts are this test's alone.
/// `slot` is unique per test across the model tests (300...399).
func modelsStackSize(_ slot: Int) -> Int {
  CoroutineStack.minimumSize + slot * 4096
}

/// Stacks of `size` in use by live coroutines. Another test trimming the pool changes the
/// mapped and pooled counts together, so the pair is read until no trim slipped in between.
func stacksInUse(size: Int) -> Int {
  while true {
    let mapped = StackPool.shared.mappedCount(size: size)
    let pooled = StackPool.shared.pooledCount(size: size)
    if StackPool.shared.mappedCount(size: size) == mapped { return mapped - pooled }
  }
}

/// A thread-safe record of events, in order.
final class ModelsLog<Value: Sendable>: Sendable {
  private let storage = Mutex<[Value]>([])
  func append(_ value: Value) { storage.withLock { $0.append(value) } }
  var values: [Value] { storage.withLock { $0 } }
  var count: Int { storage.withLock { $0.count } }
}

/// The calling thread, asked afresh on every call (a coroutine may have moved).
func modelsThread() -> ObjectIdentifier { ObjectIdentifier(Thread.current) }

/// A thread-safe counter (an `Atomic` cannot be captured by `#expect`).
final class ModelsCounter: Sendable {
  private let storage = Atomic<Int>(0)
  func increment() { storage.add(1, ordering: .relaxed) }
  var value: Int { storage.load(ordering: .relaxed) }
}

/// A scheduler with a hand-driven clock, standing in for a virtual-time test loop: it shows
/// that timeouts and delays go through the coroutine's scheduler, never the wall clock.
final class ModelsManualScheduler: CoroutineScheduler, @unchecked Sendable {
  // @unchecked: all state is behind `state`'s mutex.
  private struct Timer {
    let deadline: Double
    let job: @Sendable () -> Void
    let flag: ModelsManualTimer
  }

  private struct State {
    var jobs: [@Sendable () -> Void] = []
    var timers: [Timer] = []
    var now = 0.0
  }

  private let state = Mutex(State())

  func schedule(_ job: @escaping @Sendable () -> Void) {
    state.withLock { $0.jobs.append(job) }
  }

  func schedule(after seconds: Double, _ job: @escaping @Sendable () -> Void)
    -> any CoroutineTimer
  {
    let flag = ModelsManualTimer()
    state.withLock { $0.timers.append(Timer(deadline: $0.now + seconds, job: job, flag: flag)) }
    return flag
  }

  var pendingTimers: Int { state.withLock { $0.timers.filter { !$0.flag.isCancelled }.count } }

  /// Runs jobs until none is left; time does not move.
  func runUntilIdle() {
    while let job = state.withLock({ $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }) { job() }
  }

  /// Moves the clock on by `seconds`, firing the timers that fall due, then runs until idle.
  func advance(by seconds: Double) {
    state.withLock { state in
      state.now += seconds
      let due = state.timers.filter { $0.deadline <= state.now }
      state.timers.removeAll { $0.deadline <= state.now }
      for timer in due where timer.flag.claim() { state.jobs.append(timer.job) }
    }
    runUntilIdle()
  }
}

final class ModelsManualTimer: CoroutineTimer {
  private let done = Atomic<Bool>(false)
  func cancel() { done.store(true, ordering: .relaxed) }
  var isCancelled: Bool { done.load(ordering: .relaxed) }
  func claim() -> Bool { !done.exchange(true, ordering: .relaxed) }
}
