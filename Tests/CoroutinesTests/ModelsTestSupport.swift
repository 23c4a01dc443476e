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
