import Synchronization

/// Joins futures of different types into one future of a tuple of their values, in argument
/// order: fulfilled once all are, rejected as soon as one is (with its error).
///
/// ```swift
/// let (who, years, picture) = try co_await(co_tuple(name, age, avatar))
/// ```
///
/// The futures already run side by side; `co_tuple` only waits for them together. Awaiting a
/// single future that carries a tuple needs nothing special, since Swift destructures tuples:
/// `let (path, data, error) = try co_await(loadContent(path))`. coobjc's `co_unpack(&a, &b)`
/// is plain assignment too: `(a, b) = try co_await(future)`. For futures of one type,
/// `CoFuture.all` keeps the array form.
public func co_tuple<each T>(_ futures: repeat CoFuture<each T>) -> CoFuture<(repeat each T)> {
  let promise = CoPromise<(repeat each T)>()
  let slots = (repeat TupleSlot<each T>())
  var count = 0
  for _ in repeat each futures { count += 1 }
  let countdown = TupleCountdown(count)
  let fulfil = { promise.fulfill((repeat (each slots).take())) }
  if count == 0 { fulfil() }
  repeat watch(
    each futures, into: each slots, countdown: countdown, reject: promise.reject, fulfil: fulfil)
  return promise
}

private func watch<U>(
  _ future: CoFuture<U>, into slot: TupleSlot<U>, countdown: TupleCountdown,
  reject: @escaping (any Error) -> Void, fulfil: @escaping () -> Void
) {
  future.whenComplete { result in
    switch result {
    case .success(let value):
      slot.store(value)
      if countdown.tick() { fulfil() }
    case .failure(let error):
      reject(error)
    }
  }
}

/// One value of a `co_tuple`, written by its future's callback and read once all are in.
private final class TupleSlot<U>: @unchecked Sendable {
  // @unchecked: written once before `TupleCountdown.tick`, read after the last tick, which
  // orders the accesses.
  private var value: U?

  func store(_ value: U) { self.value = value }
  func take() -> U { value! }
}

/// Counts the futures of a `co_tuple` still pending.
private final class TupleCountdown: Sendable {
  private let remaining: Atomic<Int>

  init(_ count: Int) { remaining = Atomic(count) }

  /// True for the tick that brings the count to zero.
  func tick() -> Bool { remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 }
}
