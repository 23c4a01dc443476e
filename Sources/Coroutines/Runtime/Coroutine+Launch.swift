import CUContext
import Glibc

/// Starting a coroutine: launching it on its scheduler, or running it inline, on a fiber
/// taken from the stack pool, the loop's stash or one of its shared stacks.
extension Coroutine {
  /// Asks the scheduler to run the coroutine for the first time.
  @usableFromInline
  func launch(failing fail: @escaping @Sendable (CoroutineError) -> Void) {
    let job: @Sendable () -> Void = { self.start(failing: fail) }
    scheduler.schedule(job)
  }

  /// Like `launch(failing:)`, telling the attachment (the task) instead if the coroutine cannot
  /// start. On a loop the job names the coroutine unretained, so nothing is allocated: until the
  /// coroutine finishes, its task keeps it alive (task → coroutine → attachment → task).
  @usableFromInline
  func launchAttached() {
    if let loop {
      loop._withUnsafeGuaranteedRef { loop in
        if let group = loop.groupReference, group.toOpaque() == homeAddress {
          group._withUnsafeGuaranteedRef { $0.enqueueStart(self, on: loop, stealable: roams) }
        } else {
          loop.enqueueStart(self)
        }
      }
    } else {
      scheduler.schedule { self.startAttached() }
    }
  }

  /// Starts a coroutine launched by `launchAttached()`.
  func startAttached() {
    // Told that the coroutine cannot start, its task lets go of it, and nothing else may hold
    // it (a loop's job names it unretained): keep it until the start has returned. The release
    // is the last use of `self`.
    var keep: Unmanaged<Coroutine>?
    // The closure names the coroutine unretained: capturing `self` cost a retain and a release
    // around every start.
    let unretained = Unmanaged.passUnretained(self)
    start { error in
      keep = unretained.retain()
      unretained._withUnsafeGuaranteedRef { $0.attachment?.failedToStart(error) }
    }
    keep?.release()
  }

  /// Tells the task of a coroutine launched by `launchAttached()` that it cannot start, for
  /// `reason`, without running it.
  func refuseStart(_ reason: CoroutineError) {
    let keep = Unmanaged.passUnretained(self).retain()
    defer { keep.release() }
    transition(.finish)
    work = .none
    CoroutineRegistry.coroutineFinished(self, accounting: accounting)
    attachment?.failedToStart(reason)
  }

  func start(failing fail: (CoroutineError) -> Void) {
    if isCancelled {
      transition(.finish)
      work = .none
      CoroutineRegistry.coroutineFinished(self, accounting: accounting)
      fail(.cancelledBeforeStart)
      return
    }
    do {
      let fiber = try takeFiber()
      self.fiber = fiber
      cu_fiber_prepare(fiber, coroutineEntry, Unmanaged.passUnretained(self).toOpaque())
      CoroutineRegistry.coroutineStarted(self, on: fiber)
    } catch {
      transition(.finish)
      work = .none
      CoroutineRegistry.coroutineFinished(self, accounting: accounting)
      fail(error)
      return
    }
    transition(.start)
    keepAliveUntilFinished()
    switchIn()
  }

  /// A started coroutine owns a reference to itself until it finishes (released last thing in
  /// `switchedBack`), so that the jobs that resume it need not retain it: whoever holds a job for
  /// it, it is alive.
  func keepAliveUntilFinished() {
    _ = Unmanaged.passUnretained(self).retain()
  }

  /// A fiber for the coroutine: from the stack pool, or bound to one of its loop's shared stacks.
  func takeFiber() throws(CoroutineError) -> OpaquePointer {
    if roams, let loop = loopRunningHereUnretained,
      let fiber = loop._withUnsafeGuaranteedRef({ $0.takeStashedStack(size: stackSize) })
    {
      return fiber
    }
    guard usesSharedStack else { return try StackPool.shared.take(size: stackSize) }
    let stack = try loop!.takeUnretainedValue().sharedStacks.stack(size: stackSize)
    guard let fiber = cu_fiber_new_shared(stack) else {
      throw .stackAllocationFailed(size: stackSize, errno: ENOMEM)
    }
    return fiber
  }

  func giveBackFiber(_ fiber: OpaquePointer) {
    if roams, let loop = loopRunningHereUnretained,
      loop._withUnsafeGuaranteedRef({ $0.stashStack(fiber, size: stackSize) })
    {
      return
    }
    if usesSharedStack {
      cu_fiber_free(fiber)
    } else {
      StackPool.shared.give(fiber, size: stackSize)
    }
  }

  /// Runs the coroutine on the calling thread, without its scheduler: starts it if it was
  /// created, or resumes it after `handBack()`. Returns what it did when control came back.
  /// Generators drive their producer this way.
  func runInline() throws(CoroutineError) -> Outcome {
    coPrecondition(!usesSharedStack, "a shared-stack coroutine cannot be run inline")
    if currentState == .created {
      let fiber = try takeFiber()
      self.fiber = fiber
      cu_fiber_prepare(fiber, coroutineEntry, Unmanaged.passUnretained(self).toOpaque())
      CoroutineRegistry.coroutineStarted(self, on: fiber)
      transition(.start)
      keepAliveUntilFinished()
    } else {
      transition(.resume)
    }
    return switchIn()
  }

  /// The body, on the coroutine's own stack.
  fileprivate func runBody() {
    guard let body = takeWork().takeBody() else { coStop("a coroutine ran twice") }
    work = .completion(body())
    exit = .finish
  }

  /// Moves `work` out, leaving `.none`: a copy and a reset retained and released what it held.
  @inline(__always)
  func takeWork() -> Work {
    var taken = Work.none
    swap(&taken, &work)
    return taken
  }
}

/// The first frame of every coroutine, called by the C trampoline on the new stack. It returns
/// to the trampoline once the body is done, so no Swift frame is left on the stack.
private let coroutineEntry: cu_fiber_entry = { argument in
  // Unretained: the coroutine holds a reference to itself until it has finished.
  Unmanaged<Coroutine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.runBody() }
}
