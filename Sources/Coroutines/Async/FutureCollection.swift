import Synchronization

/// Mapping a collection of work to futures, in parallel with a limit or in series, and folding
/// futures into one value.
extension CoFuture {
  /// Makes a future for each element, at most `limit` pending at a time, and gives their values
  /// in input order; fail-fast like ``all(_:on:)``: the first error rejects the result, stops
  /// new work from starting and cancels the work under way.
  ///
  /// ```swift
  /// let pages = CoFuture.all(urls, limit: 4) { url in fetchPage(url) }
  /// ```
  ///
  /// This is how to bound concurrency: a future's work is already under way once the future
  /// exists, so `all` takes the work and starts each future only when a slot frees up. (Hydra's
  /// `all(_:concurrency:)` gets the same from promises whose bodies run only once observed.)
  ///
  /// - Parameters:
  ///   - work: The elements, one future each, in this order.
  ///   - limit: How many futures may be pending at once, 1 or more (1 runs them in series).
  ///   - scheduler: Where `make` runs and the result is delivered, `make` being `@Sendable`
  ///     then; `nil`: as without one.
  ///   - make: Starts the work for one element. An error it throws rejects the result.
  public static func all<Work: Collection>(
    _ work: Work, limit: Int = .max, on scheduler: (any CoroutineScheduler)?,
    _ make: @escaping @Sendable (Work.Element) throws -> CoFuture<T>
  ) -> CoFuture<[T]> {
    pumped(work, limit: limit, on: scheduler, make)
  }

  /// ``all(_:limit:on:_:)`` without a scheduler: the first futures are made on the calling
  /// thread and later ones on the thread that settled an earlier one.
  ///
  /// - Parameters:
  ///   - work: The elements, one future each, in this order.
  ///   - limit: How many futures may be pending at once, 1 or more (1 runs them in series).
  ///   - make: Starts the work for one element. An error it throws rejects the result.
  /// - Returns: The future of the values, in input order.
  public static func all<Work: Collection>(
    _ work: Work, limit: Int = .max, _ make: @escaping (Work.Element) throws -> CoFuture<T>
  ) -> CoFuture<[T]> {
    pumped(work, limit: limit, on: nil, make)
  }

  static func pumped<Work: Collection>(
    _ work: Work, limit: Int, on scheduler: (any CoroutineScheduler)?,
    _ make: @escaping (Work.Element) throws -> CoFuture<T>
  ) -> CoFuture<[T]> {
    coPrecondition(limit >= 1, "CoFuture.all(_:limit:): limit is \(limit), must be >= 1")
    let output = LinkedFuture<[T]>(cancelsInputsWhenSettled: true)
    let pump = WorkPump(Array(work), limit: limit, output: output, scheduler: scheduler, make)
    perform(on: scheduler) { pump.run() }
    return output
  }

  /// Makes a future for each element only after the previous one was fulfilled, and gives their
  /// values in input order; the first error rejects the result and nothing more starts.
  ///
  /// ```swift
  /// let receipts = CoFuture.series(orders) { order in submit(order) }
  /// ```
  ///
  /// - Parameters:
  ///   - work: The elements, one future each, in this order.
  ///   - scheduler: As for ``all(_:limit:on:_:)``.
  ///   - make: Starts the work for one element. An error it throws rejects the result.
  /// - Returns: The future of the values, in input order.
  public static func series<Work: Collection>(
    _ work: Work, on scheduler: (any CoroutineScheduler)?,
    _ make: @escaping @Sendable (Work.Element) throws -> CoFuture<T>
  ) -> CoFuture<[T]> {
    pumped(work, limit: 1, on: scheduler, make)
  }

  /// ``series(_:on:_:)`` without a scheduler, as ``all(_:limit:_:)``.
  ///
  /// - Parameters:
  ///   - work: The elements, one future each, in this order.
  ///   - make: Starts the work for one element. An error it throws rejects the result.
  /// - Returns: The future of the values, in input order.
  public static func series<Work: Collection>(
    _ work: Work, _ make: @escaping (Work.Element) throws -> CoFuture<T>
  ) -> CoFuture<[T]> {
    pumped(work, limit: 1, on: nil, make)
  }

  /// Folds the inputs' values, in input order, into one value once all are fulfilled;
  /// fail-fast like ``all(_:on:)``.
  ///
  /// ```swift
  /// let total = CoFuture.reduce(prices, 0) { sum, price in sum + price }
  /// ```
  ///
  /// - Parameters:
  ///   - futures: The inputs, folded in this order.
  ///   - initial: The value to start folding from.
  ///   - scheduler: Where `combine` runs, `combine` being `@Sendable` then; `nil`: as without
  ///     one.
  ///   - combine: Folds one value into the accumulated one. An error it throws rejects the
  ///     result.
  public static func reduce<Accumulated>(
    _ futures: [CoFuture<T>], _ initial: Accumulated, on scheduler: (any CoroutineScheduler)?,
    _ combine: @escaping @Sendable (Accumulated, T) throws -> Accumulated
  ) -> CoFuture<Accumulated> {
    all(futures).mapped(on: scheduler) { values in try values.reduce(initial, combine) }
  }

  /// ``reduce(_:_:on:_:)`` without a scheduler: `combine` runs on the thread that settled the
  /// last input.
  ///
  /// - Parameters:
  ///   - futures: The inputs, folded in this order.
  ///   - initial: The value to start folding from.
  ///   - combine: Folds one value into the accumulated one. An error it throws rejects the
  ///     result.
  /// - Returns: The future of the folded value.
  public static func reduce<Accumulated>(
    _ futures: [CoFuture<T>], _ initial: Accumulated,
    _ combine: @escaping (Accumulated, T) throws -> Accumulated
  ) -> CoFuture<Accumulated> {
    all(futures).mapped(on: nil) { values in try values.reduce(initial, combine) }
  }
}

/// Starts the work of `CoFuture.all(_:limit:on:_:)` as slots free up.
///
/// A future that is already settled completes inside `start`, which would start the next one
/// from inside that completion, and so on down the stack. Instead one thread at a time owns the
/// pump and starts work in a loop; a completion that finds the pump owned only updates the
/// counts, which the owner reads again before it lets go.
private final class WorkPump<Element, T>: @unchecked Sendable {  // state is behind `mutex`
  private let mutex = Mutex<Void>(())
  private let work: [Element]
  private let limit: Int
  private let output: LinkedFuture<[T]>
  private let scheduler: (any CoroutineScheduler)?
  private let make: (Element) throws -> CoFuture<T>
  private var values: [T?]
  private var started = 0
  private var pending = 0
  private var fulfilled = 0
  private var pumping = false

  init(
    _ work: [Element], limit: Int, output: LinkedFuture<[T]>,
    scheduler: (any CoroutineScheduler)?, _ make: @escaping (Element) throws -> CoFuture<T>
  ) {
    self.work = work
    self.limit = limit
    self.output = output
    self.scheduler = scheduler
    self.make = make
    self.values = Array(repeating: nil, count: work.count)
  }

  /// Starts work while slots are free, unless another thread is already doing so.
  func run() {
    if work.isEmpty {
      output.settle(.success([]))
      return
    }
    let owner = mutex.withLock { _ -> Bool in
      if pumping { return false }
      pumping = true
      return true
    }
    guard owner else { return }
    while let index = nextToStart() { start(index) }
  }

  /// Claims the next element to start, or gives up ownership of the pump.
  private func nextToStart() -> Int? {
    mutex.withLock { _ -> Int? in
      if output.isSettled || pending >= limit || started == work.count {
        pumping = false
        return nil
      }
      started += 1
      pending += 1
      return started - 1
    }
  }

  private func start(_ index: Int) {
    let future: CoFuture<T>
    do {
      future = try make(work[index])
    } catch {
      output.settle(.failure(error))
      return
    }
    output.link(future)
    future.whenComplete { result in
      switch result {
      case .success(let value):
        let all = self.mutex.withLock { _ -> [T]? in
          self.values[index] = value
          self.pending -= 1
          self.fulfilled += 1
          return self.fulfilled == self.work.count ? self.values.map { $0! } : nil
        }
        if let all {
          self.output.settle(.success(all))
        } else {
          perform(on: self.scheduler) { self.run() }
        }
      case .failure(let error):
        self.output.settle(.failure(error))
      }
    }
  }
}
