import Foundation
import Testing

@testable import Coroutines

/// Settling, cancelling and finishing take a bounded stack however long the chain: a million
/// links or attempts, on a plain thread and inside a coroutine's stack, and deeply nested
/// coroutines. One test at a time: a million links hold about 450 MB until they settle.
///
/// `COROUTINES_DEEP_LINKS` and `COROUTINES_DEEP_NESTING` lower the counts, as `make sanitize`
/// does: under AddressSanitizer 100 000 nested coroutines took 4.9 GB.
@Suite(.serialized) struct DeepChainTests {
  static let links = count(from: "COROUTINES_DEEP_LINKS") ?? 1_000_000

  // MARK: Futures

  @Test func aMillionMapsSettleOnAPlainThread() {
    let promise = CoPromise<Int>()
    let tail = mapChain(from: promise, links: Self.links)
    promise.fulfill(0)
    #expect(value(tail.result) == Self.links)
  }

  @Test func aMillionMapsSettleInsideACoroutine() throws {
    let result = try CoroutineLoop.run {
      let promise = CoPromise<Int>()
      let tail = mapChain(from: promise, links: Self.links)
      promise.fulfill(0)
      return tail.result
    }
    #expect(value(result) == Self.links)
  }

  @Test func cancellingTheTailOfAMillionLinksCancelsTheHead() throws {
    let (head, tail) = try CoroutineLoop.run { () -> (CoPromise<Int>, CoFuture<Int>) in
      let head = CoPromise<Int>()
      let tail = mapChain(from: head, links: Self.links)
      tail.cancel()
      return (head, tail)
    }
    #expect(isCancellation(tail.result))
    #expect(isCancellation(head.result))
  }

  @Test func aMillionFlatMapsOverSettledPromisesSettle() throws {
    let result = try CoroutineLoop.run { () -> Result<Int, any Error>? in
      let head = CoPromise<Int>()
      var tail: CoFuture<Int> = head
      for _ in 0..<Self.links { tail = tail.flatMap { fulfilled($0 + 1) } }
      head.fulfill(0)
      return tail.result
    }
    #expect(value(result) == Self.links)
  }

  @Test func aMillionAttemptsRejectedAtOnceRetryInBoundedStack() throws {
    let made = Counter()
    let result = try CoroutineLoop.run { () -> Result<Int, any Error>? in
      CoFuture<Int>.retry(Self.links) {
        made.increment()
        return rejected(Failure.first, as: Int.self)
      }.result
    }
    #expect(failure(result) == .first)
    #expect(made.value == Self.links)
  }

  @Test func aMillionAttemptsOnAPlainThreadSucceedAtTheLast() {
    let made = Counter()
    let result = CoFuture<Int>.retry(Self.links) {
      made.increment()
      return made.value == Self.links ? fulfilled(7) : rejected(Failure.first, as: Int.self)
    }.result
    #expect(value(result) == 7)
  }

  // MARK: Nested coroutines

  /// Nested coroutines, each the only child of the one before, on shared stacks (a parked one
  /// keeps only the bytes its frames use). Fewer than a million: a million nested coroutines
  /// took 24 s and 1.6 GB to start, park and unwind in a debug build; 100 000 is 25 times what
  /// calls from each parent to its children held before overflowing. `make bench` runs the
  /// million, in a release build.
  static let nesting = count(from: "COROUTINES_DEEP_NESTING") ?? 100_000
  /// Nested coroutines that finish at once: cheaper than parking and unwinding, so three times
  /// as many (three times the depth at which finishing by calls from each child to its parent
  /// overflowed).
  static let finishingNesting = 3 * nesting

  private static func count(from variable: String) -> Int? {
    ProcessInfo.processInfo.environment[variable].flatMap { Int($0) }
  }

  @Test func cancellingDeeplyNestedCoroutinesUnwindsThemAll() throws {
    let started = Counter()
    let unwound = Counter()
    let outcome = try CoroutineLoop.run { () -> Result<Void, any Error>? in
      let root = nest(Self.nesting, started: started, unwound: unwound)
      while started.value < Self.nesting { try co_delay(0) }
      root.cancel()
      _ = try? co_await(root)
      return root.result
    }
    #expect(started.value == Self.nesting)
    #expect(unwound.value == Self.nesting)
    #expect(isCancellation(outcome))
  }

  @Test func deeplyNestedCoroutinesFinishInBoundedStack() throws {
    // Each returns at once, so each task waits for its child: the innermost to finish completes
    // every task above it, from the loop's thread.
    let outcome = try CoroutineLoop.run { () -> Result<Int, any Error>? in
      let root = nestReturning(Self.finishingNesting)
      _ = try co_await(root)
      return root.result
    }
    #expect(value(outcome) == 1)
  }
}

/// `links` maps, each adding one, after `head`.
private func mapChain(from head: CoFuture<Int>, links: Int) -> CoFuture<Int> {
  var tail = head
  for _ in 0..<links { tail = tail.map { $0 + 1 } }
  return tail
}

/// `depth` coroutines on shared stacks, each launched by the one before, each parked on a
/// delay that only cancellation ends.
private func nest(_ depth: Int, started: Counter, unwound: Counter) -> CoTask<Void> {
  co_launch(stack: .shared) {
    defer { unwound.increment() }
    started.increment()
    if depth > 1 { _ = nest(depth - 1, started: started, unwound: unwound) }
    try co_delay(3600)
  }
}

/// `depth` nested coroutines on shared stacks that return at once, each leaving its child
/// running.
private func nestReturning(_ depth: Int) -> CoTask<Int> {
  co_launch(stack: .shared) {
    if depth > 1 { _ = nestReturning(depth - 1) }
    return 1
  }
}
