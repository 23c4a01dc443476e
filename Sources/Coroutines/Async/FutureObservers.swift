extension CoFuture {
  /// One observer: a callback, a waiting coroutine's resumer (which needs no closure), or the
  /// waiting coroutine itself.
  @usableFromInline
  enum Observer {
    case callback((Result<T, any Error>) -> Void)
    case resumer(CoroutineResumer<T>)
    /// A coroutine's wait, ended as a resumer would end it (see `Coroutine.deliver`). Holds a
    /// reference to the record, retained at registration: a delivery hands it to the woken
    /// coroutine, which releases it on its own thread; otherwise it is released here.
    case waiter(
      Unmanaged<Coroutine>, generation: UInt64,
      slot: UnsafeMutablePointer<Result<T, any Error>?>)

    @inlinable
    func notify(_ result: Result<T, any Error>) {
      switch self {
      case .callback(let callback): callback(result)
      case .resumer(let resumer): resumer.resume(result)
      case .waiter(let coroutine, let generation, let slot):
        let delivered = coroutine._withUnsafeGuaranteedRef {
          $0.deliver(result, to: slot, endingWait: generation, inRecord: true)
        }
        if !delivered { coroutine.release() }
      }
    }

    /// Ends the wait of a waiting coroutine whose future goes away unsettled.
    @usableFromInline
    func endAbandonedWait() {
      guard case .waiter(let coroutine, let generation, _) = self else { return }
      coroutine._withUnsafeGuaranteedRef { $0.endWaitUnanswered(generation) }
      coroutine.release()
    }

    /// Is a waiting coroutine rather than a callback.
    @inlinable
    var wakesCoroutine: Bool {
      if case .callback = self { return false }
      return true
    }
  }

  /// Observers in registration order, stored without an array for the common case of one.
  @usableFromInline
  struct Observers {
    @usableFromInline var first: Observer?
    @usableFromInline var rest: [Observer] = []

    @inlinable init() {}

    /// True unless every observer is a waiting coroutine (counting any beyond the first as a
    /// callback: several observers are the rare case, and the answer only picks a path).
    @inlinable
    var hasCallback: Bool {
      guard let first else { return false }
      return !(first.wakesCoroutine && rest.isEmpty)
    }

    @inlinable
    mutating func append(_ observer: Observer) {
      if first == nil { first = observer } else { rest.append(observer) }
    }

    @inlinable
    mutating func takeAll() -> Observers {
      let taken = self
      self = Observers()
      return taken
    }

    /// Tells every observer `outcome`, in order. Unspecialised, the array of the rest (empty
    /// but for several observers) is touched only when it holds some.
    @inlinable
    func notifyAll(_ outcome: Result<T, any Error>) {
      if let first { first.notify(outcome) }
      if !rest.isEmpty { rest.forEach { $0.notify(outcome) } }
    }

    /// Ends with `CancellationError` the waits of coroutines still waiting here, as their
    /// future goes away unsettled, as a resumer dropped unused would.
    @usableFromInline
    func endAbandonedWaits() {
      if let first { first.endAbandonedWait() }
      for observer in rest { observer.endAbandonedWait() }
    }
  }
}
