import CUContext

/// Switching into a coroutine and back out of it, and what happens once it is off its stack.
extension Coroutine {
  // MARK: Switching
  //
  // A call that spans a switch returns, once the coroutine switches back, into frames entered
  // before the switch, while the processor's return-address predictor holds the calls the other
  // side made meanwhile: every such return mispredicts (about 12 ns each on the machine of
  // Performance.md). So the hot paths call `cu_fiber_resume` and `cu_fiber_suspend` from the
  // frame that carries on afterwards (the loop's, or a caller's through inlinable code), doing
  // their bookkeeping in calls that return before the switch or start after it.

  /// What every resume does before its switch; the fiber to switch to.
  @inline(__always)
  func fiberToSwitchIn() -> OpaquePointer {
    registryEntry.noteSwitchIn()
    return fiber!
  }

  /// A scheduled resume up to its switch (the loop calls `cu_fiber_resume` itself, then
  /// `switchedBack()`); the fiber to switch to.
  func fiberForResume() -> OpaquePointer {
    transition(.resume)
    return fiberToSwitchIn()
  }

  /// Another inline run of a coroutine that handed back (see `runInline()`) up to its switch:
  /// the fiber to switch to, or nil if the coroutine has not started yet and must start through
  /// `runInline()`.
  @usableFromInline
  func fiberForInlineRun() -> OpaquePointer? {
    if currentState == .created { return nil }
    transition(.resume)
    return fiberToSwitchIn()
  }

  @discardableResult
  func switchIn() -> Outcome {
    cu_fiber_resume(fiberToSwitchIn(), Unmanaged.passUnretained(self).toOpaque())
    return switchedBack()
  }

  /// `switchedBack()` after an inline run, whose usual end, a hand back, is checked first.
  @usableFromInline
  func switchedBackFromInlineRun() {
    guard case .handBack = exit else {
      switchedBack()
      return
    }
    transition(.reschedule)  // ready to be run inline again; nothing is enqueued
  }

  /// What a resume does once the coroutine has switched back: parks it, queues it again, hands
  /// it back or retires it, as it asked. Returns why it switched back. `resumer` is the address
  /// of the loop whose own thread resumed it, if any (an address: a reference cost a retain).
  @discardableResult
  func switchedBack(resumedBy resumer: UnsafeMutableRawPointer? = nil) -> Outcome {
    // Read once: after parking, another thread may resume the coroutine and change `exit`.
    let reason = exit
    switch reason {
    case .park:
      // Off its stack now: either park it, or honour a wake-up that came while it left.
      if !compareAndSwap(.running, .suspended) {
        transition(.park)  // woken early → scheduled
        enqueueResume(resumedBy: resumer)
      }
      return .parked
    case .reschedule:
      transition(.reschedule)
      enqueueResume(resumedBy: resumer)
      return .parked
    case .finish:
      transition(.finish)
      giveBackFiber(fiber!)
      fiber = nil
      let publish = takeWork()
      CoroutineRegistry.coroutineFinished(self, accounting: accounting)
      Self.retire(Unmanaged.passUnretained(self), publishing: publish)
      return .finished
    case .handBack:
      transition(.reschedule)  // ready to be run inline again; nothing is enqueued
      return .handedBack
    }
  }

  /// Runs the coroutine on this thread until it parks, reschedules or finishes.
  func resume() {
    transition(.resume)
    switchIn()
  }

  /// Switches out and lets the scheduler run the coroutine again after the jobs already
  /// queued: a suspension with no wait, so it allocates nothing on a loop.
  func yieldToScheduler() {
    cu_fiber_suspend(fiberToYield())
  }

  /// `yieldToScheduler()` up to its switch: the fiber to suspend.
  @usableFromInline
  func fiberToYield() -> OpaquePointer {
    exit = .reschedule
    return fiber!
  }

  /// Switches back to whoever ran the coroutine inline (`runInline()`), leaving it ready to be
  /// run inline again.
  func handBack() {
    cu_fiber_suspend(fiberToHandBack())
  }

  /// `handBack()` up to its switch: the fiber to suspend.
  @inline(__always)
  func fiberToHandBack() -> OpaquePointer {
    exit = .handBack
    return fiber!
  }

  /// Prefetch hints for a loop about to resume this coroutine (see `JobQueue`).
  func prefetchContext() { if let fiber { cu_fiber_prefetch_context(fiber) } }
  func prefetchFrames() { if let fiber { cu_fiber_prefetch_frames(fiber) } }

  /// Publishes a finished coroutine's outcome, then drops the reference it held to itself,
  /// which may free it. Static, with the coroutine unmanaged: as a method naming `self` after
  /// the publishing call, it retained and released the coroutine and the closure once more.
  @inline(never)
  static func retire(_ coroutine: Unmanaged<Coroutine>, publishing work: consuming Work) {
    if let publish = work.takeCompletion() { publish() }
    coroutine.release()
  }
}
