/// Folding a collection of work with asynchronous steps.
extension CoFuture {
  /// Folds `work` one element at a time, each step a future made from the previous partial
  /// result (Hydra's `reduce`): the step for an element starts only once the step before it
  /// was fulfilled.
  ///
  /// ```swift
  /// let total = CoFuture.reduce(items, 0) { sum, item in price(item).map { sum + $0 } }
  /// ```
  ///
  /// The first error (a step's future rejected, or `step` throwing) rejects the result, and
  /// nothing more starts. Cancelling the result cancels the step under way. A fold over steps
  /// that are already settled runs in a loop, not a recursion, however long `work` is.
  ///
  /// - Parameters:
  ///   - work: The elements, folded in this order.
  ///   - initial: The partial result the first step starts from, and the result for no work.
  ///   - scheduler: Where `step` runs and the result is delivered, `step` being `@Sendable`
  ///     then; `nil`: as ``reduce(_:_:step:)``.
  ///   - step: Makes the future of the next partial result from the current one and an element.
  /// - Returns: The future of the folded value.
  public static func reduce<Work: Collection>(
    _ work: Work, _ initial: T, on scheduler: (any CoroutineScheduler)?,
    step: @escaping @Sendable (_ partial: T, _ element: Work.Element) throws -> CoFuture<T>
  ) -> CoFuture<T> {
    folded(work, initial, on: scheduler, step: step)
  }

  /// ``reduce(_:_:on:step:)`` without a scheduler: the first step runs on the calling thread
  /// and later ones on the thread that settled the step before.
  ///
  /// - Parameters:
  ///   - work: The elements, folded in this order.
  ///   - initial: The partial result the first step starts from, and the result for no work.
  ///   - step: Makes the future of the next partial result from the current one and an element.
  /// - Returns: The future of the folded value.
  public static func reduce<Work: Collection>(
    _ work: Work, _ initial: T,
    step: @escaping (_ partial: T, _ element: Work.Element) throws -> CoFuture<T>
  ) -> CoFuture<T> {
    folded(work, initial, on: nil, step: step)
  }

  static func folded<Work: Collection>(
    _ work: Work, _ initial: T, on scheduler: (any CoroutineScheduler)?,
    step: @escaping (_ partial: T, _ element: Work.Element) throws -> CoFuture<T>
  ) -> CoFuture<T> {
    let output = LinkedFuture<T>()
    // Each step starts after the previous one ended, so `step` and the elements are never
    // touched concurrently.
    nonisolated(unsafe) let elements = Array(work)
    nonisolated(unsafe) let step = step

    // A step that settles at once calls back on this thread's trampoline, after this call
    // returns: the fold never nests deeper than one step.
    @Sendable func fold(from index: Int, _ partial: T) {
      guard !output.isSettled else { return }
      guard index < elements.count else {
        output.settle(.success(partial))
        return
      }
      let next: CoFuture<T>
      do {
        next = try step(partial, elements[index])
      } catch {
        output.settle(.failure(error))
        return
      }
      output.link(next)
      next.whenComplete { result in
        switch result {
        case .success(let value):
          // Handed to the one job that continues the fold.
          nonisolated(unsafe) let value = value
          perform(on: scheduler) { fold(from: index + 1, value) }
        case .failure(let error):
          output.settle(.failure(error))
        }
      }
    }

    // Handed to the one job that starts the fold.
    nonisolated(unsafe) let initial = initial
    perform(on: scheduler) { fold(from: 0, initial) }
    return output
  }
}
