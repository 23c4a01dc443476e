extension CoFuture {
  /// A future of this future's value together with the values of `others`, which may each have
  /// a different type; fail-fast like ``all(_:on:)``, and like it, cancelling the result or a
  /// failure cancels the inputs still pending.
  ///
  /// ```swift
  /// let (user, avatar, unread) = try co_await(fetchUser().zip(fetchAvatar(), countUnread()))
  /// ```
  ///
  /// - Parameters:
  ///   - others: The futures whose values follow this one's in the tuple.
  ///   - scheduler: Where the result is delivered; without one, on the thread that settled the
  ///     deciding input.
  public func zip<each Other>(
    _ others: repeat CoFuture<each Other>, on scheduler: (any CoroutineScheduler)? = nil
  ) -> CoFuture<(T, repeat each Other)> {
    let output = LinkedFuture<(T, repeat each Other)>(cancelsInputsWhenSettled: true)
    var inputs: [CoFuture<Void>] = [erased(self, into: output)]
    for other in repeat each others { inputs.append(erased(other, into: output)) }
    let tally = Tally<Bool>(count: inputs.count, initial: false)
    for (index, input) in inputs.enumerated() {
      input.whenSettled { result in
        switch result {
        case .success:
          guard tally.record(true, at: index) != nil else { return }
          // Every input is fulfilled, so each `settledValue` below succeeds.
          let values = Result { (try settledValue(self), repeat try settledValue(each others)) }
          perform(on: scheduler) { output.settle(values) }
        case .failure(let error):
          perform(on: scheduler) { output.settle(.failure(error)) }
        }
      }
    }
    return output
  }
}

/// Links `input` to `output` and gives a type-erased future of its outcome, so a pack of
/// differently typed inputs can be counted in one array.
private func erased<Value, Output>(
  _ input: CoFuture<Value>, into output: LinkedFuture<Output>
) -> CoFuture<Void> {
  output.link(input)
  let signal = LinkedFuture<Void>()
  input.whenComplete { signal.settle($0.map { _ in () }) }
  return signal
}

/// The value of a future known to be settled.
private func settledValue<Value>(_ future: CoFuture<Value>) throws -> Value {
  try future.peek!.get()
}
