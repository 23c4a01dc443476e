import Synchronization

/// Waits on several channel operations (and futures) at once and runs the handler of the one
/// that completes.
///
/// ```swift
/// let message: String = try co_select { select in
///   select.receive(from: numbers) { number in "number \(number)" }
///   select.receive(from: words) { word in "word \(word)" }
///   select.send(42, to: answers) { "sent the answer" }
///   select.await(lookup) { name in "looked up \(name)" }
///   select.timeout(0.5) { "nothing within half a second" }
/// }
/// ```
///
/// `build` only describes the cases; then `co_select` completes exactly one of them and returns
/// what its handler returns:
/// - If some cases can complete at once, one of them is picked at random, so a busy first case
///   cannot starve the others (on a seeded ``CoroutineTestLoop``, from the seed's sequence).
/// - Otherwise, with a ``CoSelect/default(_:)`` case, its handler runs and nothing waits (such
///   a select works outside coroutines too).
/// - Otherwise the coroutine suspends until one case can complete, or the
///   ``CoSelect/timeout(_:_:)`` passes on the coroutine's scheduler's clock. The other cases
///   are then withdrawn: their channels neither lose nor take a value.
///
/// A receive case on a channel that is closed and drained is ready: it runs its `onClosed`
/// handler, or makes `co_select` throw ``CoroutineError/channelClosed`` if it has none. A send
/// case on a closed channel makes `co_select` throw ``CoroutineError/channelClosed``.
///
/// - Throws: What the chosen handler throws; ``CoroutineError/channelClosed`` as above;
///   `CancellationError` if the coroutine is cancelled before or while waiting;
///   ``CoroutineError/notInCoroutine`` if it must wait outside a coroutine.
public func co_select<R>(_ build: (CoSelect<R>) throws -> Void) throws -> R {
  let select = CoSelect<R>()
  try build(select)
  return try select.run()
}

/// The cases of one ``co_select(_:)``: add them inside its `build` closure.
///
/// The handlers run on the selecting coroutine after the choice is made, outside every
/// channel's lock, so they may use channels (even the same ones) and suspend.
public final class CoSelect<R> {
  private var cases: [any SelectCase<R>] = []
  private var defaultHandler: (() throws -> R)?
  private var timeoutCase: (seconds: Double, handler: () throws -> R)?

  init() {}

  /// Receives a value from `channel` and passes it to `handler`. If the channel is closed and
  /// drained, `co_select` throws ``CoroutineError/channelClosed``.
  public func receive<T>(from channel: CoChannel<T>, _ handler: @escaping (T) throws -> R) {
    cases.append(SelectReceive(storage: channel.storage, onClosed: nil, handler: handler))
  }

  /// Receives a value from `channel` and passes it to `handler`; runs `onClosed` instead once
  /// the channel is closed and drained, which lets a loop over several channels go on with
  /// the ones still open.
  public func receive<T>(
    from channel: CoChannel<T>, onClosed: @escaping () throws -> R,
    _ handler: @escaping (T) throws -> R
  ) {
    cases.append(SelectReceive(storage: channel.storage, onClosed: onClosed, handler: handler))
  }

  /// Sends `value` to `channel`, then runs `handler`. If the channel is closed, `co_select`
  /// throws ``CoroutineError/channelClosed``; if another case wins, `value` is not sent.
  public func send<T>(_ value: T, to channel: CoChannel<T>, _ handler: @escaping () throws -> R) {
    cases.append(SelectSend(storage: channel.storage, value: value, handler: handler))
  }

  /// Receives a value through `receiver` (transformed, if it was made by
  /// `Receiver.map(_:)`) and passes it to `handler`. If the channel is closed and
  /// drained, `co_select` throws ``CoroutineError/channelClosed``.
  public func receive<T>(
    from receiver: CoChannel<T>.Receiver, _ handler: @escaping (T) throws -> R
  ) {
    cases.append(receiver.source.selectCase(onClosed: nil, handler: handler))
  }

  /// Receives a value through `receiver` and passes it to `handler`; runs `onClosed` instead
  /// once the channel is closed and drained.
  public func receive<T>(
    from receiver: CoChannel<T>.Receiver, onClosed: @escaping () throws -> R,
    _ handler: @escaping (T) throws -> R
  ) {
    cases.append(receiver.source.selectCase(onClosed: onClosed, handler: handler))
  }

  /// Sends `value` through `sender`, then runs `handler`; as for a channel.
  public func send<T>(
    _ value: T, to sender: CoChannel<T>.Sender, _ handler: @escaping () throws -> R
  ) {
    send(value, to: sender.channel, handler)
  }

  /// Waits for `future` and passes its value to `handler`; if the future is rejected,
  /// `co_select` throws its error. A future that settles while another case wins is left
  /// alone: it is neither cancelled nor counted as observed.
  ///
  /// A select that waits leaves a small waiter on a pending future (as `co_await` does),
  /// which the future releases when it settles: a loop that selects many times over one
  /// future that stays pending for long (a shutdown signal, say) keeps one per turn; there,
  /// close a channel when the future settles and receive from it instead.
  public func await<T>(_ future: CoFuture<T>, _ handler: @escaping (T) throws -> R) {
    cases.append(SelectFuture(future: future, handler: handler))
  }

  /// Runs `handler` if no case can complete within `seconds` on the selecting coroutine's
  /// scheduler's clock (virtual time on a test loop). At most one per select, and not
  /// together with a default case.
  public func timeout(_ seconds: Double, _ handler: @escaping () throws -> R) {
    coPrecondition(timeoutCase == nil, "CoSelect.timeout(_:_:): a select has at most one timeout")
    coPrecondition(
      !seconds.isNaN, "CoSelect.timeout(_:_:): the timeout is NaN")
    timeoutCase = (seconds, handler)
  }

  /// Runs `handler` at once if no case can complete right now: the select then never waits.
  /// At most one per select, and not together with a timeout.
  public func `default`(_ handler: @escaping () throws -> R) {
    coPrecondition(defaultHandler == nil, "CoSelect.default(_:): a select has at most one default")
    defaultHandler = handler
  }

  fileprivate func run() throws -> R {
    coPrecondition(
      !cases.isEmpty || timeoutCase != nil || defaultHandler != nil,
      "co_select: no cases were added, so it would wait forever")
    coPrecondition(
      defaultHandler == nil || timeoutCase == nil,
      "co_select: a default case runs at once, so a timeout beside it could never fire")
    let coroutine = Coroutine.current
    if defaultHandler == nil {
      guard let coroutine else { throw CoroutineError.notInCoroutine }
      if coroutine.isCancelled { throw CancellationError() }
    }
    let order = SelectOrder.shuffled(
      cases.count, on: coroutine?.scheduler as? CoroutineTestLoop)
    let locks = distinctLocks()
    for lock in locks { lock.lock() }
    for index in order {
      if let claimed = cases[index].attempt() {
        for lock in locks.reversed() { lock.unlock() }
        claimed?.wake()
        return try cases[index].complete()
      }
    }
    if let defaultHandler {
      for lock in locks.reversed() { lock.unlock() }
      return try defaultHandler()
    }
    // Every case's waiter holds the same wait of this coroutine: the first claim wins it.
    let generation = coroutine!.armWait(.select)
    for index in order { cases[index].register(coroutine: coroutine!, generation: generation) }
    for lock in locks.reversed() { lock.unlock() }
    return try wait(coroutine!, generation: generation)
  }

  private func wait(_ coroutine: Coroutine, generation: UInt64) throws -> R {
    let timedOut = timeoutCase.map { timeout in
      let flag = SelectTimeoutFlag()
      flag.timer = coroutine.scheduler.schedule(after: timeout.seconds) {
        if coroutine.claim(generation) {
          flag.fired.store(true, ordering: .releasing)
          coroutine.wake()
        }
      }
      return flag
    }
    coroutine.endWaitIfCancelled(generation)
    coroutine.park()
    if let timedOut {
      // The timer's job holds the flag, and the flag the timer: drop the link, or the two (and
      // the coroutine the job names) would keep each other alive for ever.
      timedOut.timer?.cancel()
      timedOut.timer = nil
    }
    // The winner, if a channel operation won, is the one case whose waiter has an outcome; the
    // others are withdrawn from their channels.
    let winner = cases.firstIndex { $0.hasWon }
    for (index, selectCase) in cases.enumerated() where index != winner {
      selectCase.unregister()
    }
    if let winner { return try cases[winner].complete() }
    if let timedOut, timedOut.fired.load(ordering: .acquiring) {
      return try timeoutCase!.handler()
    }
    throw CancellationError()
  }

  /// Each channel's lock once, in address order, so two selects over the same channels never
  /// wait for each other's locks.
  private func distinctLocks() -> [ShortLock] {
    var locks = cases.map(\.lock)
    locks.sort { ObjectIdentifier($0) < ObjectIdentifier($1) }
    var distinct: [ShortLock] = []
    for lock in locks where distinct.last !== lock { distinct.append(lock) }
    return distinct
  }
}

/// Whether a select's timeout won its wait, and the timer to cancel when something else did.
private final class SelectTimeoutFlag: @unchecked Sendable {  // `fired` is atomic; see `timer`
  let fired = Atomic<Bool>(false)
  /// Set once, by the selecting coroutine before it parks, and read by it after it wakes.
  var timer: (any CoroutineTimer)?
}

/// The random order in which a select tries its cases: a uniform shuffle. On a seeded
/// ``CoroutineTestLoop`` it is drawn from the seed's sequence, so a test replays the same
/// choices; elsewhere from SplitMix64 over a process-wide counter, which is cheap and needs no
/// system call.
private enum SelectOrder {
  private static let counter = Atomic<UInt64>(UInt64.random(in: .min ... .max))
  private static let gamma: UInt64 = 0x9E37_79B9_7F4A_7C15

  static func shuffled(_ count: Int, on testLoop: CoroutineTestLoop?) -> [Int] {
    var order = Array(0..<count)
    guard count > 1 else { return order }
    if let testLoop, testLoop.seed != nil {
      for last in stride(from: count - 1, to: 0, by: -1) {
        order.swapAt(last, testLoop.seededIndex(below: last + 1) ?? last)
      }
      return order
    }
    // Reserve `count` draws of the shared stream, so no two selects reuse a draw.
    var stream = SplitMix64(
      seed: counter.wrappingAdd(gamma &* UInt64(count), ordering: .relaxed).oldValue)
    for last in stride(from: count - 1, to: 0, by: -1) {
      order.swapAt(last, stream.index(below: last + 1))
    }
    return order
  }
}
