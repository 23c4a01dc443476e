/// One coroutine's wait on the simulated network: no resumer object to allocate and free per
/// wait. Every way a wait ends takes it off its list (a wake by the list empties it; a timeout
/// or a cancellation takes it off in `SimulatedWorld.wait`), so no list drops one unanswered.
typealias SimulatedWaiter = CoroutineWaiter<Void>

/// The coroutines waiting on a side or a listener: usually one, so the first is kept apart and
/// waiting costs no array.
struct SimulatedWaiters {
  private var first: SimulatedWaiter?
  /// Optional rather than empty: retaining and releasing the shared empty array goes through
  /// the runtime's slow path (it is immortal), twice per wait.
  private var others: [SimulatedWaiter]?

  mutating func append(_ waiter: SimulatedWaiter) {
    if first == nil {
      first = waiter
    } else if others == nil {
      others = [waiter]
    } else {
      others!.append(waiter)
    }
  }

  mutating func remove(_ waiter: SimulatedWaiter) {
    if first?.isSame(as: waiter) == true {
      first = others?.isEmpty == false ? others!.removeFirst() : nil
    } else {
      others?.removeAll { $0.isSame(as: waiter) }
    }
    if others?.isEmpty == true { others = nil }
  }

  /// Ends every wait with `result`; the list is empty afterwards.
  mutating func resumeAll(_ result: Result<Void, any Error>) {
    guard let waiter = first else { return }
    first = nil
    let others = self.others
    self.others = nil
    waiter.resume(result)
    if let others { for waiter in others { waiter.resume(result) } }
  }
}

extension SimulatedWorld {
  /// The virtual deadline of a call given `timeout` seconds, checked as a real socket's call
  /// checks it (a negative or NaN timeout stops the program naming `call`).
  func deadline(_ timeout: Double?, in call: StaticString) -> UInt64? {
    checkedTimeout(timeout, in: call).map { now &+ nanoseconds($0) }
  }

  /// Runs `attempt` under the lock until it returns a value, parking the coroutine in between
  /// until `register`'s waiter is woken (something changed), the virtual `deadline` passes
  /// (``CoroutineError/timedOut``) or the coroutine is cancelled (`CancellationError`).
  ///
  /// `attempt` is tried again under the lock in the same step that registers the waiter, so a
  /// change cannot slip between the look and the wait.
  func wait<R>(
    until deadline: UInt64?,
    _ attempt: () throws -> R?,
    register: (SimulatedWaiter) -> Void,
    unregister: (SimulatedWaiter) -> Void
  ) throws -> R {
    if let result = try lock.withLock(attempt) { return result }
    let coroutine = try Coroutine.requireCurrent()
    while true {
      if let deadline, now >= deadline { throw CoroutineError.timedOut }
      var found: R?
      var waiter: SimulatedWaiter?
      var timer: (any CoroutineTimer)?
      defer { timer?.cancel() }
      do {
        let delivered = try coroutine.waitForDelivery(for: .simulatedNetwork) {
          (generation, slot: UnsafeMutablePointer<Result<Void, any Error>?>) in
          let resumer = SimulatedWaiter(coroutine: coroutine, generation: generation, slot: slot)
          do {
            found = try lock.withLock {
              if let result = try attempt() { return result }
              register(resumer)
              return nil
            }
          } catch {
            resumer.resume(.failure(error))
            return
          }
          if found != nil {
            resumer.resume(.success(()))
            return
          }
          waiter = resumer
          if let deadline {
            let now = self.now
            timer = loop.schedule(after: Double(deadline > now ? deadline - now : 0) / 1e9) {
              resumer.resume(.failure(CoroutineError.timedOut))
            }
          }
        }
        // Nil: cancelled (the wait was ended without a result).
        guard let delivered else { throw CancellationError() }
        try delivered.get()
      } catch {
        // Woken otherwise than by its list (a timeout, a cancellation): still on it. A wake by
        // the list took every waiter off it, so a wait that ends well looks at it no more.
        if let waiter { lock.withLock { unregister(waiter) } }
        throw error
      }
      if let found { return found }
      if let result = try lock.withLock(attempt) { return result }
    }
  }
}
