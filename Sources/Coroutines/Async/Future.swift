import Synchronization

/// A value that arrives later: pending until settled, then settled exactly once.
///
/// Futures follow the Promise/A+ rules: later settles are ignored; observers added after
/// settling still fire; each observer fires exactly once. Any thread may settle, observe or
/// await. Create one with ``CoPromise`` or ``co_launch(on:name:stackSize:_:)``.
public class CoFuture<T>: @unchecked Sendable, TrampolineTarget {  // state is behind `futureLock`
  // The state is `@usableFromInline` and the hot paths `@inlinable`, so that a caller in another
  // module runs them specialised for its `T`: unspecialised, every settle, observe and read
  // looked up the metadata of `Result<T, any Error>?` and `Observers` in the runtime's tables.
  // The members are `final` too: CoFuture has subclasses, so a member that could be overridden
  // was called through the class's table, unspecialised, even from specialised code (each
  // such call looked the metadata up again: about five look-ups per await of a promise).
  // `@exclusivity(unchecked)`: the fields are only touched inside `futureLock` (or, for a task's
  // outcome, by its own coroutine before it is published), and no access calls out to code that
  // could reach them again (observers run after the lock is dropped).
  //
  // No stored property's type depends on `T` beyond a class reference: the deinitialiser runs
  // unspecialised, and destroying a `Result<T, any Error>?` there looked up its metadata (and
  // `Optional`'s) in the runtime's tables for every future, about 650 instructions per launch.
  // The outcome is kept in two words instead (see `storeOutcome`), whose destruction needs at
  // most `T`'s own metadata, which the instance's class already holds.
  @usableFromInline let futureLock = Mutex<Void>(())
  // The one-byte fields follow the 4-byte lock, in the padding before the first word.
  /// Written only inside `futureLock`, read there too.
  @usableFromInline let futureStateWord = Atomic<FutureState>(.pending)
  /// Whether anyone has looked at the outcome (see ``CoUnhandledErrors``).
  @usableFromInline @exclusivity(unchecked) final var futureObserved = false
  /// Settled, with observers in `futureObservers` that a ``Trampoline`` will tell: an observer
  /// added meanwhile joins them, after them, rather than running before them.
  @usableFromInline @exclusivity(unchecked) final var futureNotifying = false
  /// Set while a coroutine may wait in `futureObservers` itself (see ``Observer/waiter``), so
  /// that the deinitialiser looks for waits to end only when there may be some: looking through
  /// the observers there, unspecialised, cost every future generic look-ups.
  @usableFromInline @exclusivity(unchecked) final var futureHoldsWaiter = false
  /// Where the future is in its life: read relaxed, published with a release.
  @inlinable
  final var futureState: FutureState {
    get { futureStateWord.load(ordering: .relaxed) }
    set { futureStateWord.store(newValue, ordering: .releasing) }
  }
  /// The error of a rejected future.
  @usableFromInline @exclusivity(unchecked) final var futureError: (any Error)?
  /// The value of a fulfilled future: its bytes when `T` is trivial and fits in a word
  /// (`Void`, `Int`, `Bool`…), else a retained ``FutureValueBox`` holding it (0 until stored).
  @usableFromInline @exclusivity(unchecked) final var futureWord: UInt = 0
  @usableFromInline @exclusivity(unchecked) final var futureObservers = Observers()

  @inlinable init() {}

  deinit {
    if futureHoldsWaiter { futureObservers.endAbandonedWaits() }
    // Reads only `T`'s value witnesses, from this instance's class: no look-up.
    if futureWord != 0, !Self.valueFitsInWord {
      Unmanaged<AnyObject>.fromOpaque(
        UnsafeRawPointer(bitPattern: futureWord)!
      ).release()
    }
  }

  /// True when a `T` is kept in `futureWord` itself rather than in a box.
  @inlinable
  static var valueFitsInWord: Bool { fitsInWord(T.self) }

  /// Writes `result` into the outcome's storage without publishing it (`futureState` is left
  /// alone). Only on a pending future, inside `futureLock` or by the future's only writer.
  @inlinable
  final func storeOutcome(_ result: Result<T, any Error>) {
    switch result {
    case .success(let value):
      if Self.valueFitsInWord {
        var word: UInt = 0
        withUnsafeMutableBytes(of: &word) { $0.storeBytes(of: value, as: T.self) }
        futureWord = word
      } else {
        futureWord = UInt(bitPattern: Unmanaged.passRetained(FutureValueBox(value)).toOpaque())
      }
    case .failure(let error):
      futureError = error
    }
  }

  /// The published outcome; `nil` while pending. Inside `futureLock`.
  @inlinable
  final var futureOutcome: Result<T, any Error>? {
    switch futureState {
    case .pending: return nil
    case .rejected: return .failure(futureError!)
    case .fulfilled:
      if Self.valueFitsInWord {
        return .success(withUnsafeBytes(of: futureWord) { $0.load(as: T.self) })
      }
      let box = Unmanaged<FutureValueBox<T>>.fromOpaque(UnsafeRawPointer(bitPattern: futureWord)!)
      return .success(box.takeUnretainedValue().value)
    }
  }

  /// The outcome once settled; `nil` while pending. Reading it counts as observing the future.
  @inlinable
  public final var result: Result<T, any Error>? {
    futureLock.withLock { _ in
      futureObserved = true
      return futureOutcome
    }
  }

  /// True once the future has settled. Asking does not count as observing the outcome.
  public final var isSettled: Bool { futureLock.withLock { _ in futureState != .pending } }

  /// Calls `callback` once with the outcome: on the thread that settles the future, right after
  /// it settles, or at once on this thread if it already has. Counts as observing the future.
  ///
  /// When the settle (or this call) happens inside another callback, `callback` runs on the
  /// same thread right after that callback returns, in the order callbacks were added: a chain
  /// of futures of any length is told one link after another, never one inside another.
  @inlinable
  public final func whenComplete(_ callback: @escaping (Result<T, any Error>) -> Void) {
    observe(callback, marking: true)
  }

  /// Like ``whenComplete(_:)``, for the runtime's own bookkeeping (scopes, parents), which must
  /// not make an error count as handled.
  @inlinable
  final func whenSettled(_ callback: @escaping (Result<T, any Error>) -> Void) {
    observe(callback, marking: false)
  }

  /// The outcome, without counting as an observation.
  @inlinable
  final var peek: Result<T, any Error>? { futureLock.withLock { _ in futureOutcome } }

  /// True once someone awaited, observed or read the outcome.
  @inlinable
  final var wasObserved: Bool { futureLock.withLock { _ in futureObserved } }

  @inlinable
  final func observe(_ callback: @escaping (Result<T, any Error>) -> Void, marking: Bool) {
    observe(.callback(callback), marking: marking)
  }

  /// Resumes `resumer` with the outcome, like ``whenComplete(_:)`` with `resumer.resume` but
  /// without allocating a closure for it: the await path (`co_await`) uses this. Counts as
  /// observing the future.
  @inlinable
  final func whenComplete(resuming resumer: CoroutineResumer<T>) {
    observe(.resumer(resumer), marking: true)
  }

  /// Ends `coroutine`'s armed wait of `generation` with the outcome, written to `slot`: the
  /// await path (`co_await`) uses this, with no resumer object between the future and the
  /// coroutine, so the settling thread reaches the coroutine's record straight from the
  /// future's. Counts as observing the future.
  @inlinable
  final func whenComplete(
    waking coroutine: Coroutine, generation: UInt64,
    into slot: UnsafeMutablePointer<Result<T, any Error>?>
  ) {
    observe(
      .waiter(.passRetained(coroutine), generation: generation, slot: slot), marking: true)
  }

  @inlinable
  final func observe(_ observer: Observer, marking: Bool) {
    var route = NotificationRoute.now
    let settled = futureLock.withLock { _ -> Result<T, any Error>? in
      if marking { futureObserved = true }
      if futureState == .pending || futureNotifying {
        if case .waiter = observer { futureHoldsWaiter = true }
        futureObservers.append(observer)
        return nil
      }
      // Settled: a waiting coroutine is only scheduled, so it is told at once; a callback is
      // told through this stack's trampoline, as by a settle (see ``routeLocked()``).
      if case .callback = observer {
        if let trampoline = Trampoline.running {
          futureNotifying = true
          futureObservers.append(observer)
          route = .left(trampoline)
          return nil
        }
        route = .run
      }
      return futureOutcome
    }
    if let settled {
      if case .run = route {
        Trampoline.run { observer.notify(settled) }
      } else {
        observer.notify(settled)
      }
    } else if case .left(let trampoline) = route {
      trampoline.leave(self)
    }
  }

  /// Rejects a pending future with `CancellationError`; does nothing once settled.
  public func cancel() {
    settle(.failure(CancellationError()))
  }

  /// Waits for the outcome inside a coroutine; see `co_await(_:)`.
  @inlinable
  public final func await() throws -> T {
    try co_await(self)
  }

  /// Settles the future if it is pending; returns false when it had already settled.
  @discardableResult
  @inlinable
  final func settle(_ result: Result<T, any Error>) -> Bool {
    guard settleOutcome(result) else { return false }
    didSettle()
    return true
  }

  /// Stores `result` and notifies the observers, if the future is pending; without
  /// ``didSettle()``.
  @inlinable
  final func settleOutcome(_ result: Result<T, any Error>) -> Bool {
    var route: NotificationRoute? = nil
    let toNotify = futureLock.withLock { _ -> Observers? in
      guard futureState == .pending else { return nil }
      storeOutcome(result)
      if case .failure = result { futureState = .rejected } else { futureState = .fulfilled }
      let chosen = routeLocked()
      route = chosen
      if case .left = chosen { return nil }  // they stay for the trampoline
      return takeObservers()
    }
    guard let route else { return false }
    if let toNotify {
      tell(toNotify, route, result)
    } else if case .left(let trampoline) = route {
      trampoline.leave(self)
    }
    return true
  }

  /// Decides how the observers of the outcome just published are told. Inside `futureLock`.
  ///
  /// Waiting coroutines (resumers) are only scheduled, so they are told at once: the await
  /// path never looks for a trampoline. A callback may settle further futures, so callbacks
  /// are told with this stack's trampoline running; if a callback is running on this stack
  /// already, they stay in `futureObservers` for its trampoline (see ``Trampoline``) and
  /// `futureNotifying` says so.
  @inlinable @inline(__always)
  final func routeLocked() -> NotificationRoute {
    guard futureObservers.hasCallback else { return .now }
    guard let trampoline = Trampoline.running else { return .run }
    futureNotifying = true
    return .left(trampoline)
  }

  /// Tells `observers` the published `outcome` the way ``routeLocked()`` chose, outside the
  /// lock (for `.left` they wait in `futureObservers` instead). Always inlined: unspecialised,
  /// a call of its own looked up the generic metadata of its parameters again.
  @inlinable @inline(__always)
  final func tell(
    _ observers: Observers, _ route: NotificationRoute, _ outcome: Result<T, any Error>
  ) {
    switch route {
    case .now: observers.notifyAll(outcome)
    case .run: Trampoline.run { observers.notifyAll(outcome) }
    case .left(let trampoline): trampoline.leave(self)
    }
  }

  /// Tells the observers waiting in `futureObservers` for a trampoline. An observer added
  /// while they are told finds `futureNotifying` clear and is left on the trampoline again,
  /// after them.
  ///
  /// Always reached unspecialised (through `TrampolineTarget`), so it touches as few generic
  /// types as it can: each costs a look-up in the runtime's tables on every call.
  @usableFromInline
  func runLeftWork() {
    let single = futureLock.withLock { _ -> Observer? in
      guard futureObservers.rest.isEmpty else { return nil }
      futureNotifying = false
      defer {
        futureObservers.first = nil
        futureHoldsWaiter = false
      }
      return futureObservers.first
    }
    // Published, so it never changes again: read outside the lock.
    guard let single else { return runLeftWorkOfSeveral() }
    single.notify(publishedOutcome)
  }

  /// ``runLeftWork()`` for several observers, or none.
  @usableFromInline
  func runLeftWorkOfSeveral() {
    let observers = futureLock.withLock { _ -> Observers in
      futureNotifying = false
      return takeObservers()
    }
    observers.notifyAll(publishedOutcome)
  }

  /// The outcome of a published future (never pending); inside `futureLock`, or outside it
  /// once published, as it never changes again.
  @inlinable
  final var publishedOutcome: Result<T, any Error> {
    if futureState == .rejected { return .failure(futureError!) }
    if Self.valueFitsInWord {
      return .success(withUnsafeBytes(of: futureWord) { $0.load(as: T.self) })
    }
    let box = Unmanaged<FutureValueBox<T>>.fromOpaque(UnsafeRawPointer(bitPattern: futureWord)!)
    return .success(box.takeUnretainedValue().value)
  }

  /// Publishes the outcome already written with ``storeOutcome(_:)`` and notifies the
  /// observers, if the future is still pending; returns the outcome if it did. A task settles
  /// this way, so that the closure that publishes its body's outcome captures the task alone.
  /// Only for a future that nothing else settles (a task: its `cancel()` does not settle it).
  @inlinable
  final func publishStoredOutcome() {
    var route = NotificationRoute.now
    let toNotify = futureLock.withLock { _ in publishStoredOutcomeLocked(&route) }
    if let toNotify { notifyPublished(toNotify, route) }
  }

  /// The part of ``publishStoredOutcome()`` inside `futureLock`: marks the outcome published
  /// and returns the observers to notify (with `route` saying how), or `nil` if the future had
  /// already settled or nobody observes it. Most launched coroutines are never observed: for
  /// them nothing is copied out of the lock, and the outcome is never read back (about 70
  /// instructions per launch).
  @inlinable
  final func publishStoredOutcomeLocked(_ route: inout NotificationRoute) -> Observers? {
    guard futureState == .pending else { return nil }
    futureState = futureError == nil ? .fulfilled : .rejected
    guard futureObservers.first != nil else { return nil }
    route = routeLocked()
    if case .left = route { return Observers() }  // they stay for the trampoline
    return takeObservers()
  }

  /// Notifies `observers` of the published outcome, outside the lock.
  @inlinable
  final func notifyPublished(_ observers: Observers, _ route: NotificationRoute) {
    // Published, so it never changes again: read outside the lock. (A tuple of the outcome
    // and the observers out of the lock was copied through the runtime's tuple witnesses.)
    tell(observers, route, futureOutcome!)
  }

  /// Called once, after ``settle(_:)`` settled the future and notified its observers: a
  /// subclass's hook (``LinkedFuture`` cancels its inputs here). Not generic, so overriding it
  /// leaves `settle` specialised.
  @usableFromInline
  func didSettle() {}

  /// Moves the observers out to be told, inside `futureLock`.
  @inlinable
  final func takeObservers() -> Observers {
    futureHoldsWaiter = false
    return futureObservers.takeAll()
  }
}

/// Where a future keeps a value that does not fit in a word. A class, so that the future's
/// storage is one reference whatever `T` is, and releasing it needs only `T`'s metadata.
@usableFromInline
final class FutureValueBox<T> {
  @usableFromInline let value: T
  @inlinable init(_ value: T) { self.value = value }
}

/// Where a future is in its life; one byte.
@usableFromInline
enum FutureState: UInt8, AtomicRepresentable {
  case pending, fulfilled, rejected
}
