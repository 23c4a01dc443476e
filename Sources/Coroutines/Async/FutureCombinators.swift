import Synchronization

/// Combinators that wait for several futures at once.
///
/// Each owns its inputs: once its result is settled it cancels the inputs it no longer needs
/// (the losers of a race, the rest after `all` fails), so work launched only to feed it stops,
/// and cancelling the result cancels every input still pending. To combine a future that others
/// also await without letting the combinator cancel it, pass a copy:
/// `let copy = CoPromise<T>(); shared.whenComplete(copy.resolve)`.
///
/// Without a scheduler the result settles on the thread that settled the deciding input; with
/// one, on that scheduler.
extension CoFuture {
  /// A future of every input's value, in input order; rejected with the first error to arrive,
  /// at once (fail-fast). An empty array gives `[]`.
  ///
  /// ```swift
  /// let pages = try co_await(CoFuture.all(urls.map(fetchPage)))
  /// ```
  public static func all(
    _ futures: [CoFuture<T>], on scheduler: (any CoroutineScheduler)? = nil
  ) -> CoFuture<[T]> {
    let output = LinkedFuture<[T]>(cancelsInputsWhenSettled: true)
    guard !futures.isEmpty else {
      output.settle(.success([]))
      return output
    }
    let tally = Tally<T?>(count: futures.count, initial: nil)
    for (index, future) in futures.enumerated() {
      output.link(future)
      future.whenComplete { result in
        switch result {
        case .success(let value):
          if let values = tally.record(value, at: index) {
            perform(on: scheduler) { output.settle(.success(values.map { $0! })) }
          }
        case .failure:
          perform(on: scheduler) { output.settle(result.map { [$0] }) }
        }
      }
    }
    return output
  }

  /// A future of the first input to be fulfilled; rejected only when every input has been
  /// rejected, with a ``CoAggregateError`` holding every error in input order (at once for an
  /// empty array).
  public static func any(
    _ futures: [CoFuture<T>], on scheduler: (any CoroutineScheduler)? = nil
  ) -> CoFuture<T> {
    let output = LinkedFuture<T>(cancelsInputsWhenSettled: true)
    guard !futures.isEmpty else {
      output.settle(.failure(CoAggregateError(errors: [])))
      return output
    }
    let tally = Tally<(any Error)?>(count: futures.count, initial: nil)
    for (index, future) in futures.enumerated() {
      output.link(future)
      future.whenComplete { result in
        switch result {
        case .success:
          perform(on: scheduler) { output.settle(result) }
        case .failure(let error):
          if let errors = tally.record(error, at: index) {
            let aggregate = CoAggregateError(errors: errors.map { $0! })
            perform(on: scheduler) { output.settle(.failure(aggregate)) }
          }
        }
      }
    }
    return output
  }

  /// A future with the outcome of the first input to settle, value or error. An empty array
  /// gives a future rejected at once with an empty ``CoAggregateError``, rather than one that
  /// never settles.
  public static func race(
    _ futures: [CoFuture<T>], on scheduler: (any CoroutineScheduler)? = nil
  ) -> CoFuture<T> {
    let output = LinkedFuture<T>(cancelsInputsWhenSettled: true)
    guard !futures.isEmpty else {
      output.settle(.failure(CoAggregateError(errors: [])))
      return output
    }
    for future in futures {
      output.link(future)
      future.whenComplete { result in perform(on: scheduler) { output.settle(result) } }
    }
    return output
  }
}

/// The errors of every input of `CoFuture.any(_:on:)` when none was fulfilled, in input order.
public struct CoAggregateError: Error, CustomStringConvertible {
  /// One error per input, in the order the inputs were given.
  public let errors: [any Error]

  /// Creates an error that carries `errors`.
  public init(errors: [any Error]) {
    self.errors = errors
  }

  /// Every error, in order.
  public var description: String {
    errors.isEmpty
      ? "no input settled: the list of futures was empty"
      : "all \(errors.count) futures were rejected: "
        + errors.map { String(describing: $0) }.joined(separator: "; ")
  }
}

/// Slots filled from many threads; reports the full set to whoever fills the last one.
final class Tally<Element>: @unchecked Sendable {  // `slots` and `remaining` are behind `mutex`
  private let mutex = Mutex<Void>(())
  private var slots: [Element]
  private var remaining: Int

  init(count: Int, initial: Element) {
    slots = Array(repeating: initial, count: count)
    remaining = count
  }

  /// Fills slot `index`; returns every slot once the last one is filled, else nil.
  func record(_ element: Element, at index: Int) -> [Element]? {
    mutex.withLock { _ in
      slots[index] = element
      remaining -= 1
      return remaining == 0 ? slots : nil
    }
  }
}
