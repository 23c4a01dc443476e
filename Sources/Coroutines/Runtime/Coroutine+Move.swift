import CLinux
import CUContext

/// Where a coroutine resumes: queued on its loop, beside its waker in a group, pinned to the
/// loop whose timers or poller it waits in, or on another scheduler for `co_await(on:)`.
extension Coroutine {
  @inline(__always)
  func enqueueResume(resumedBy resumer: UnsafeMutableRawPointer? = nil) {
    if let loop {
      // Away (`co_await(on:)`), it resumes where it went, as any visitor does.
      if roams, !isPinned, !isAway {
        enqueueRoaming(lastLoop: loop)
        return
      }
      // Switched back into the loop it belongs to, on that loop's thread: queued without asking
      // the thread which loop it runs.
      if loop.toOpaque() == resumer {
        loop._withUnsafeGuaranteedRef { $0.enqueueLocal(self) }
        return
      }
      loop._withUnsafeGuaranteedRef { $0.enqueue(self) }
    } else if away == nil, let driven = CoroutineTestLoop.currentPointer, driven == homeAddress {
      // Woken on the thread that drives its test loop (by a timer or another of its coroutines):
      // queued as itself, without a closure (the address spares a cast, as in `noteParkOffLoop`).
      Unmanaged<CoroutineTestLoop>.fromOpaque(driven)._withUnsafeGuaranteedRef {
        $0.enqueueResume(self)
      }
    } else {
      scheduler.schedule { self.resume() }
    }
  }

  /// Queues a group coroutine's resumption on the calling thread's loop if that is one of the
  /// group's (a coroutine woken by another resumes beside it), else on the loop it last ran on.
  @inline(never)
  func enqueueRoaming(lastLoop: Unmanaged<CoroutineLoop>) {
    lastLoop._withUnsafeGuaranteedRef { last in
      if let here = cu_tls_current_loop() {
        let current = Unmanaged<CoroutineLoop>.fromOpaque(here)
        let joined = current._withUnsafeGuaranteedRef { current -> Bool in
          guard current.groupReference?.toOpaque() == last.groupReference?.toOpaque() else {
            return false
          }
          current.enqueueStealable(StealableJob(resume: Unmanaged.passUnretained(self)))
          return true
        }
        if joined { return }
      }
      last.enqueueFromElsewhere(StealableJob(resume: Unmanaged.passUnretained(self)))
    }
  }

  /// The loop a coroutine resuming on `scheduler` is queued on: the scheduler if it is a loop,
  /// a loop of it if it is a group (the calling thread's, or the next in turn).
  static func resumeLoop(for scheduler: any CoroutineScheduler) -> Unmanaged<
    CoroutineLoop
  >? {
    if let loop = scheduler as? CoroutineLoop { return Unmanaged.passUnretained(loop) }
    if let group = scheduler as? CoroutineLoopGroup {
      return group.placementLoop()
    }
    return nil
  }

  /// Records that a group coroutine, about to run, runs on `loop` from now on (the loop's own
  /// thread; nothing else reads `loop` until the coroutine suspends again).
  func moved(to loop: Unmanaged<CoroutineLoop>) {
    self.loop = loop
  }

  /// Runs `body`, a wait in the running loop's own timers or poller, with the coroutine kept on
  /// that loop: woken from anywhere, it resumes there, and no other loop may take it meanwhile.
  func pinned<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    isPinned = true
    defer { isPinned = false }
    return try body()
  }

  /// The loop the coroutine resumes on, when the calling thread is running it now: the loop
  /// whose poller its descriptor waits go to.
  var loopRunningHere: CoroutineLoop? { loopRunningHereUnretained?.takeUnretainedValue() }

  /// `loopRunningHere`, unretained (the thread runs it): a retain and a release of a group's
  /// loop, which its other threads also touch, per stack taken and given back.
  var loopRunningHereUnretained: Unmanaged<CoroutineLoop>? {
    guard let loop, loop._withUnsafeGuaranteedRef({ $0.isCurrent }) else { return nil }
    return loop
  }

  /// Switches out and lets the scheduler run the coroutine again, on `target` from now on.
  func hop(to target: any CoroutineScheduler) {
    scheduler = target
    yieldToScheduler()
  }
}
