import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// Errors the tests throw and expect back.
enum Failure: Error, Equatable {
  case first, second, third, disk
  case attempt(Int)
}

/// True if `result` is a failure with `CancellationError`.
func isCancellation<T>(_ result: Result<T, any Error>?) -> Bool {
  guard case .failure(let error)? = result else { return false }
  return error is CancellationError
}

/// The error of a failed result, if it is a `Failure`.
func failure<T>(_ result: Result<T, any Error>?) -> Failure? {
  guard case .failure(let error)? = result else { return nil }
  return error as? Failure
}

/// The error of a failed result, if it is a `CoroutineError`.
func coroutineError<T>(_ result: Result<T, any Error>?) -> CoroutineError? {
  guard case .failure(let error)? = result else { return nil }
  return error as? CoroutineError
}

/// The value of a fulfilled result.
func value<T>(_ result: Result<T, any Error>?) -> T? {
  guard case .success(let value)? = result else { return nil }
  return value
}

/// A future already fulfilled with `value`.
func fulfilled<T>(_ value: T) -> CoFuture<T> {
  let promise = CoPromise<T>()
  promise.fulfill(value)
  return promise
}

/// A future already rejected with `error`.
func rejected<T>(_ error: any Error, as: T.Type = T.self) -> CoFuture<T> {
  let promise = CoPromise<T>()
  promise.reject(error)
  return promise
}

/// A thread-safe counter owned by one test.
final class Counter: Sendable {
  private let storage = Atomic<Int>(0)
  var value: Int { storage.load(ordering: .acquiring) }
  @discardableResult
  func increment() -> Int { storage.add(1, ordering: .acquiringAndReleasing).newValue }
}

/// A thread-safe list owned by one test.
final class Journal<Element: Sendable>: Sendable {
  private let storage = Mutex<[Element]>([])
  var entries: [Element] { storage.withLock { $0 } }
  func append(_ element: Element) { storage.withLock { $0.append(element) } }
}

/// Runs each job on a thread of its own, starting them in the order given by `order`, and
/// returns once all have run. (Not on `DispatchQueue.global()`: on Linux it shares its few
/// threads with Swift's cooperative pool, which the waiting test itself occupies.)
func runConcurrently(_ jobs: [@Sendable () -> Void], order: [Int]) {
  let group = DispatchGroup()
  for index in order {
    let job = jobs[index]
    group.enter()
    Thread {
      job()
      group.leave()
    }.start()
  }
  group.wait()
}

/// A stack size that no other test uses, so a test can check that every stack of that size it
/// mapped is back in the pool (no coroutine of its own left alive) while other tests run.
enum TestStacks {
  private static let next = Atomic<Int>(0)

  /// Sizes from 3 MiB + 4 KiB up, in 4 KiB steps: odd enough that no other test uses them.
  static func uniqueSize() -> Int {
    3 * 1024 * 1024 + 4096 * next.add(1, ordering: .relaxed).newValue
  }

  /// True when no stack of `size` is in use.
  static func allReturned(size: Int) -> Bool {
    StackPool.shared.mappedCount(size: size) == StackPool.shared.pooledCount(size: size)
  }
}

/// Settles futures one at a time from many threads, recording which settles took effect in
/// the order they did: with settling serialised by one lock, the first entry is exactly the
/// first input to settle, while the threads still race for the lock.
final class SettleRecorder: Sendable {
  private let order = Mutex<[Int]>([])

  var settled: [Int] { order.withLock { $0 } }

  func settle<T>(_ promise: CoPromise<T>, index: Int, with result: Result<T, any Error>) {
    // The lock is held across the settle so that its callbacks run before the next settle.
    nonisolated(unsafe) let result = result
    order.withLock { order in
      if promise.settle(result) { order.append(index) }
    }
  }
}

/// True if `result` is a failure that means "asked to stop": `CancellationError`, or
/// `CoroutineError.cancelledBeforeStart` for a task cancelled before its coroutine ran.
func wasCancelled<T>(_ result: Result<T, any Error>?) -> Bool {
  guard case .failure(let error)? = result else { return false }
  return error.isCancellation
}
