import CLinux
import CUContext
import Glibc
import Synchronization

/// The runtime's record of one stackful coroutine: its fiber, its state and its scheduler.
///
/// The lifecycle (see ``CoroutineState``) and the wait word are atomics shared with wakers on
/// other threads; every other field is touched only by the thread currently driving the
/// coroutine, and the switch that hands it over orders those accesses.
@usableFromInline  // reached from the inlinable awaiting path (see CoroutineResumer)
final class Coroutine: @unchecked Sendable {  // cross-thread fields are atomics; see above
  /// Why control came back from the fiber to its resumer.
  private enum Exit { case park, reschedule, handBack, finish }

  /// What a coroutine did when control came back to whoever resumed it.
  enum Outcome { case handedBack, parked, finished }

  // The fields are ordered so that the small ones share one word at the end: a parked
  // coroutine's record is most of what it costs on a shared stack.

  let name: String?
  /// The size of the coroutine's stack in bytes.
  var stackSize: Int { Int(stackBytes) }
  /// Where the coroutine belongs; `CoroutineLoop.run` waits for the coroutines of its loop.
  /// Read it only while the coroutine counts as live (see `Home.group`).
  var home: any CoroutineScheduler {
    switch homeReference {
    case .retained(let scheduler): return scheduler
    case .group(let group): return group.takeUnretainedValue()
    }
  }
  private let homeReference: Home

  private enum Home {
    case retained(any CoroutineScheduler)
    /// A group that a child inherited from its parent, unretained: a coroutine that counts as
    /// live keeps the group's loops, whose threads hold the group, from ending. A strong
    /// reference cost each launch and each destruction an atomic on the group's count, which
    /// every loop of the group fought over.
    case group(Unmanaged<CoroutineLoopGroup>)
  }
  /// Where the coroutine resumes now: `home`, except while it hops for `co_await(on:)`.
  private(set) var scheduler: any CoroutineScheduler {
    get { away ?? home }
    set {
      isAway = (newValue as AnyObject) !== (home as AnyObject)
      loop = Self.resumeLoop(for: newValue)
      away = isAway ? newValue : nil
      schedulerChanges &+= 1
    }
  }
  /// `scheduler` while it is not `home`: a second strong reference to `home` cost a retain of
  /// the loop at each launch and a release at each destruction.
  private var away: (any CoroutineScheduler)?
  /// `scheduler` when it is a loop, unretained (`scheduler` keeps it alive): enqueueing a
  /// resumption then costs no retain. For a coroutine of a group, the group's loop it runs on
  /// (or last ran on).
  private var loop: Unmanaged<CoroutineLoop>?

  /// The async layer's record of this coroutine (its task, which knows its parent and
  /// children): set before the coroutine starts, cleared once it has finished, read only by
  /// code running on the coroutine. The runtime itself never looks at it. Typed, not `AnyObject`:
  /// casting to `any TaskNode` at each launch searched the conformance tables.
  // usableFromInline: set by the inlinable launch. Unchecked: only the task's launch and finish
  // and the coroutine's own code touch it, one after another, and no access calls out.
  @usableFromInline @exclusivity(unchecked) var attachment: (any TaskNode)?
  /// The coroutine-local bindings (see `CoLocal`), set at launch from the launcher's and changed
  /// only by the coroutine's own code; the runtime never looks inside.
  @usableFromInline @exclusivity(unchecked) var locals: AnyObject?

  private var fiber: OpaquePointer?
  /// Where callbacks running on this coroutine leave the work they start (see ``Trampoline``),
  /// while they run; touched only by code on this coroutine.
  var trampoline: Trampoline?
  /// The next entry of the loop inbox this coroutine waits in to be resumed or started (see
  /// `RemoteInbox`): written by the thread that queues it, read by the loop that takes it.
  @exclusivity(unchecked) var inboxNext: UInt = 0
  /// Links and counters of the live-coroutine registry (dumps, the stall watchdog).
  let registryEntry = CoroutineRegistryEntry()
  /// The body until it starts; then, once it has returned, what publishes its outcome.
  private var work: Work

  private enum Work {
    case body(() -> (() -> Void))
    case completion(() -> Void)
    case none

    /// The body, moved out rather than copied (a copy retained what it captured).
    consuming func takeBody() -> (() -> (() -> Void))? {
      switch consume self {
      case .body(let body): return body
      default: return nil
      }
    }

    /// The closure that publishes the outcome, moved out rather than copied.
    consuming func takeCompletion() -> (() -> Void)? {
      switch consume self {
      case .completion(let completion): return completion
      default: return nil
      }
    }
  }

  // The delivered word, the wait word and the state side by side: a waker writes the first,
  // claims the second and changes the third, and a watching loop looks at the state, so
  // together they cross between cores as one line.
  /// The value that ended the last wait, when it is a `T` that fits in a word (see
  /// `deliver(_:to:endingWait:inRecord:)`): the woken coroutine reads it from the line the
  /// wake-up brought back, rather than from its own frame's, which the waker would have taken
  /// from its core.
  // usableFromInline: the inlinable await writes and reads it. Unchecked: the claim makes the
  // waker the only writer, and the wake-up orders its write before the coroutine's read.
  @usableFromInline @exclusivity(unchecked) var deliveredWord: UInt = 0
  /// `generation << 1 | armed`: a waker may claim only the wait it was made for, once.
  private let waitWord = Atomic<UInt64>(0)
  /// The address of the loop that watches the coroutine while it is `watched` or `handedOver`
  /// (see `parkWatched`); stale otherwise.
  private let watcher = Atomic<UInt>(0)
  private let state: Atomic<CoroutineState>
  @usableFromInline let cancelled = Atomic<Bool>(false)
  /// Whether `deliveredWord` holds the value of the wait that just ended.
  @usableFromInline @exclusivity(unchecked) var wordDelivered = false
  /// True when the coroutine runs on one of its loop's shared stacks (see SharedStack.swift):
  /// nothing may then point into its frames while it is parked.
  @usableFromInline let usesSharedStack: Bool
  /// True while the coroutine runs on another scheduler than its own (`co_await(on:)`).
  private(set) var isAway = false
  /// True for a coroutine of a ``CoroutineLoopGroup`` that may move between its loops: one on
  /// a dedicated stack.
  private let roams: Bool
  /// True while the coroutine waits in its loop's own timers or poller: it must resume on that
  /// loop, which alone may touch them (see `pinned(_:)`).
  private var isPinned = false
  /// Set by the loop when a `co_delay` sleep reaches its deadline, before it wakes the
  /// coroutine; a sleep woken without it was cancelled.
  private var sleepRang = false
  private var exit = Exit.finish
  // The 32-bit fields after the one-byte ones, which fill the bytes that `work` leaves in its
  // last word.
  /// How many times `scheduler` has changed: with the coroutine's address, a cheap key for
  /// what was worked out from its scheduler (see InlineDriver).
  private(set) var schedulerChanges: UInt32 = 0
  /// `stackSize`, in 32 bits beside the other small fields: no stack exceeds
  /// `CoroutineStack.maximumSize` (1 GiB), and the word it saves holds `trampoline` (with
  /// `locals`, the record still fits the loop's prefetch, `prefetchBytes`).
  private let stackBytes: UInt32
  /// `home` as the loop that counts its coroutines, cast once; unretained (see AccountingLoop).
  /// Last: its optional's tag byte would otherwise leave seven bytes of padding.
  private let accounting: AccountingLoop?

  /// Creates a coroutine that runs `body` on `scheduler`; nothing runs until `start()`.
  /// `body` returns the closure that publishes its outcome, called once the coroutine is off
  /// its stack.
  @usableFromInline
  init(
    scheduler: any CoroutineScheduler, name: String?, stackSize: Int, sharedStack: Bool = false,
    body: @escaping () -> (() -> Void)
  ) {
    coPrecondition(
      !sharedStack || scheduler is CoroutineLoop || scheduler is CoroutineLoopGroup,
      "a shared-stack coroutine needs a CoroutineLoop or a CoroutineLoopGroup")
    self.name = name
    self.stackBytes = UInt32(stackSize)
    self.usesSharedStack = sharedStack
    self.away = nil
    self.loop = Self.resumeLoop(for: scheduler)
    self.roams = !sharedStack && scheduler is CoroutineLoopGroup
    self.state = Atomic(.created)
    self.accounting = AccountingLoop(of: scheduler)
    // Moved in, not copied: a copy made the specialised body retain them and its caller's
    // thunk release them again (a pair of calls each per launch).
    self.work = .body(consume body)
    self.homeReference = .retained(consume scheduler)
    CoroutineRegistry.coroutineCreated(self, accounting: accounting)
  }

  /// Creates a coroutine of `group` launched without a scheduler by one of the group's own
  /// coroutines, which keeps the group alive meanwhile (see `Home.group`).
  ///
  /// A second designated initializer rather than both delegating to one taking the home, the
  /// loop and the accounting: that one cost every launch about 60 instructions more (measured
  /// with callgrind on `bench --figure spawn`).
  @usableFromInline
  init(
    inheriting group: Unmanaged<CoroutineLoopGroup>, name: String?, stackSize: Int,
    sharedStack: Bool, body: @escaping () -> (() -> Void)
  ) {
    self.name = name
    self.stackBytes = UInt32(stackSize)
    self.usesSharedStack = sharedStack
    self.away = nil
    self.loop = group._withUnsafeGuaranteedRef { $0.placementLoop() }
    self.roams = !sharedStack
    self.state = Atomic(.created)
    self.accounting = AccountingLoop(group: group)
    self.work = .body(consume body)
    self.homeReference = .group(group)
    CoroutineRegistry.coroutineCreated(self, accounting: accounting)
  }

  /// The group of the coroutine running on this thread, unretained, if it belongs to one.
  @usableFromInline
  static var currentGroup: Unmanaged<CoroutineLoopGroup>? {
    guard let coroutine = currentUnretained else { return nil }
    return coroutine._withUnsafeGuaranteedRef { coroutine in
      switch coroutine.homeReference {
      case .group(let group): return group
      case .retained(let scheduler):
        guard let group = scheduler as? CoroutineLoopGroup else { return nil }
        return Unmanaged.passUnretained(group)
      }
    }
  }

  deinit {
    CoroutineRegistry.coroutineDestroyed(self)
    coPrecondition(fiber == nil, "a coroutine was destroyed while its stack was in use")
  }

  /// The coroutine running on this thread, if any.
  @usableFromInline
  static var current: Coroutine? {
    guard let pointer = cu_tls_current_coroutine() else { return nil }
    return Unmanaged<Coroutine>.fromOpaque(pointer).takeUnretainedValue()
  }

  /// The coroutine running on this thread, if any, without a retain: for hot paths that only
  /// compare it or use it while it certainly runs.
  static var currentUnretained: Unmanaged<Coroutine>? {
    guard let pointer = cu_tls_current_coroutine() else { return nil }
    return Unmanaged<Coroutine>.fromOpaque(pointer)
  }

  /// The current coroutine, unretained, or `CoroutineError.notInCoroutine`: for hot paths
  /// that use it only while it runs (whoever resumed it holds it until it switches back).
  /// Inlinable: called from another module, a static method is passed the class's metadata,
  /// which cost a call to its accessor on every `co_await`.
  @inlinable
  static func requireCurrentUnretained() throws(CoroutineError) -> Unmanaged<Coroutine> {
    guard let pointer = cu_tls_current_coroutine() else { throw .notInCoroutine }
    return Unmanaged<Coroutine>.fromOpaque(pointer)
  }

  /// The current coroutine, or `CoroutineError.notInCoroutine`.
  @usableFromInline
  static func requireCurrent() throws(CoroutineError) -> Coroutine {
    guard let coroutine = current else { throw .notInCoroutine }
    return coroutine
  }

  /// The lifecycle state right now (a snapshot: other threads may change it).
  var currentState: CoroutineState { state.load(ordering: .acquiring) }

  /// Bytes of this coroutine's stack waiting in its heap buffer (shared stacks only; 0 while its
  /// frames are in place). For tests and diagnostics, on the thread that drives the coroutine.
  var savedStackBytes: Int { fiber.map { cu_fiber_saved_size($0) } ?? 0 }

  @inlinable
  var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

  // MARK: Scheduling

  /// `home`'s address, to compare without retaining it.
  private var homeAddress: UnsafeMutableRawPointer {
    switch homeReference {
    case .retained(let scheduler):
      return Unmanaged.passUnretained(scheduler as AnyObject).toOpaque()
    case .group(let group): return group.toOpaque()
    }
  }

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

  private func start(failing fail: (CoroutineError) -> Void) {
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
  private func keepAliveUntilFinished() {
    _ = Unmanaged.passUnretained(self).retain()
  }

  /// A fiber for the coroutine: from the stack pool, or bound to one of its loop's shared stacks.
  private func takeFiber() throws(CoroutineError) -> OpaquePointer {
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

  private func giveBackFiber(_ fiber: OpaquePointer) {
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

  /// Runs the coroutine on this thread until it parks, reschedules or finishes.
  func resume() {
    transition(.resume)
    switchIn()
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

  @inline(__always)
  private func enqueueResume(resumedBy resumer: UnsafeMutableRawPointer? = nil) {
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
    } else {
      scheduler.schedule { self.resume() }
    }
  }

  /// Queues a group coroutine's resumption on the calling thread's loop if that is one of the
  /// group's (a coroutine woken by another resumes beside it), else on the loop it last ran on.
  @inline(never)
  private func enqueueRoaming(lastLoop: Unmanaged<CoroutineLoop>) {
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
  private static func resumeLoop(for scheduler: any CoroutineScheduler) -> Unmanaged<
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
  private func fiberToSwitchIn() -> OpaquePointer {
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
  private func switchIn() -> Outcome {
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
      if let resumer, parkWatched(by: resumer) { return .parked }
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

  // MARK: Watched by its loop

  /// Parks the coroutine watched by `loop` (the address of the loop whose thread resumed it)
  /// when that loop has nothing else to run: a thread that is not a loop's then wakes it by
  /// its state alone, which the spinning loop sees, and the wake-up crosses between the cores
  /// without a queue. False, with nothing done, if the loop has other work or a wake-up came
  /// while the coroutine left its stack.
  private func parkWatched(by loop: UnsafeMutableRawPointer) -> Bool {
    let watching = Unmanaged<CoroutineLoop>.fromOpaque(loop)
    guard watching._withUnsafeGuaranteedRef({ $0.mayWatch }) else { return false }
    // Named before the swap, which publishes it: once watched, a waker may hand it over.
    watcher.store(UInt(bitPattern: loop), ordering: .relaxed)
    // The loop's reference: a loop's thread may take the coroutine away from the watch, and
    // it may finish elsewhere before the loop looks again.
    let held = Unmanaged.passUnretained(self).retain()
    guard compareAndSwap(.running, .watched) else {
      held.release()
      return false
    }
    watching._withUnsafeGuaranteedRef { $0.watch(held) }
    return true
  }

  /// Where a watch by `loop` stands.
  enum WatchStatus { case watching, handedOver, ended }

  /// Where `loop`'s watch of this coroutine stands: still watching, handed over to it (it runs
  /// the coroutine now), or ended (a loop's thread took the coroutine, and it may be watched
  /// by another loop since). The watching loop's thread only.
  func watchStatus(for loop: UnsafeMutableRawPointer) -> WatchStatus {
    let now = state.load(ordering: .acquiring)
    guard now == .watched || now == .handedOver,
      watcher.load(ordering: .relaxed) == UInt(bitPattern: loop)
    else { return .ended }
    return now == .watched ? .watching : .handedOver
  }

  /// Ends a watch that `watchStatus` found still watching: true if the coroutine is merely
  /// suspended now, false if a waker came first.
  func endWatch() -> Bool { compareAndSwap(.watched, .suspended) }

  /// Publishes a finished coroutine's outcome, then drops the reference it held to itself,
  /// which may free it. Static, with the coroutine unmanaged: as a method naming `self` after
  /// the publishing call, it retained and released the coroutine and the closure once more.
  @inline(never)
  private static func retire(_ coroutine: Unmanaged<Coroutine>, publishing work: consuming Work) {
    if let publish = work.takeCompletion() { publish() }
    coroutine.release()
  }

  /// The body, on the coroutine's own stack.
  fileprivate func runBody() {
    guard let body = takeWork().takeBody() else { coStop("a coroutine ran twice") }
    work = .completion(body())
    exit = .finish
  }

  /// Moves `work` out, leaving `.none`: a copy and a reset retained and released what it held.
  @inline(__always)
  private func takeWork() -> Work {
    var taken = Work.none
    swap(&taken, &work)
    return taken
  }

  // MARK: Waiting (called on the coroutine's own stack)

  /// Arms a new wait and returns its generation; a waker holding it may wake the coroutine once.
  @usableFromInline
  func armWait() -> UInt64 {
    let generation = (waitWord.load(ordering: .relaxed) >> 1) &+ 1
    // Sequentially consistent, like `cancel()`: of the arm here and the flag there, at least
    // one side sees the other (see `endWaitIfCancelled`).
    waitWord.store(generation << 1 | 1, ordering: .sequentiallyConsistent)
    return generation
  }

  /// Ends the armed wait with cancellation if `cancel()` ran before it could see the wait.
  /// Without this, a cancel landing between the caller's cancellation check and `armWait()`
  /// would find nothing to wake, and the coroutine would sleep through it.
  @usableFromInline
  func endWaitIfCancelled(_ generation: UInt64) {
    if cancelled.load(ordering: .sequentiallyConsistent), claim(generation) { wake() }
  }

  /// Switches out until the armed wait is claimed and woken; returns at once if it already was.
  func park() {
    if let fiber = fiberToPark() { cu_fiber_suspend(fiber) }
  }

  /// `park()` up to its switch: the fiber to suspend, or nil if the wait was already woken.
  /// Inlinable callers suspend it themselves (see "Switching").
  @usableFromInline
  func fiberToPark() -> OpaquePointer? {
    // Only a waker's `running → wokenEarly` can have changed the state, and nothing changes it
    // back but this thread: a plain load decides, and most parks skip the locked instruction,
    // which right after a switch into a cold coroutine waited for that switch's stores. A wake
    // that lands after the load is caught by the compare-and-swap in `switchedBack`.
    if state.load(ordering: .acquiring) == .wokenEarly, compareAndSwap(.wokenEarly, .running) {
      return nil
    }
    exit = .park
    return fiber!
  }

  /// Prefetch hints for a loop about to resume this coroutine (see `JobQueue`).
  func prefetchContext() { if let fiber { cu_fiber_prefetch_context(fiber) } }
  func prefetchFrames() { if let fiber { cu_fiber_prefetch_frames(fiber) } }

  /// Sleeps `delay` nanoseconds in its loop's timer heap (see `sleep(on:nanoseconds:)`) when it
  /// resumes on a loop and runs on that loop's thread now; false, without waiting, otherwise.
  /// Reads the loop unretained: the loop outlives the coroutines it runs.
  func sleepOnCurrentLoop(nanoseconds delay: UInt64) throws(CancellationError) -> Bool {
    guard let loop, loop._withUnsafeGuaranteedRef({ $0.isCurrent }) else { return false }
    // Not `takeUnretainedValue()`: the strong reference it makes cost a retain and a release
    // of the loop on every timed `co_delay`.
    let cancelled = loop._withUnsafeGuaranteedRef { loop -> Bool in
      do throws(CancellationError) {
        try sleep(on: loop, nanoseconds: delay)
        return false
      } catch {
        return true
      }
    }
    if cancelled { throw CancellationError() }
    return true
  }

  /// Sleeps `delay` nanoseconds in `loop`'s timer heap without allocating: the loop wakes the
  /// coroutine itself. Must run on this coroutine's stack, on the loop's thread.
  func sleep(on loop: CoroutineLoop, nanoseconds delay: UInt64) throws(CancellationError) {
    if isCancelled { throw CancellationError() }
    sleepRang = false
    pinned {
      let generation = armWait()
      loop.addSleep(self, generation: generation, nanoseconds: delay)
      endWaitIfCancelled(generation)
      park()
    }
    if !sleepRang {
      loop.sleepEndedEarly()
      throw CancellationError()
    }
  }

  /// Ends a `co_delay` sleep at its deadline, after the loop claimed its wait.
  func wakeFromSleep() {
    sleepRang = true
    wake()
  }

  /// The loop the coroutine resumes on, when the calling thread is running it now: the loop
  /// whose poller its descriptor waits go to.
  var loopRunningHere: CoroutineLoop? { loopRunningHereUnretained?.takeUnretainedValue() }

  /// `loopRunningHere`, unretained (the thread runs it): a retain and a release of a group's
  /// loop, which its other threads also touch, per stack taken and given back.
  private var loopRunningHereUnretained: Unmanaged<CoroutineLoop>? {
    guard let loop, loop._withUnsafeGuaranteedRef({ $0.isCurrent }) else { return nil }
    return loop
  }

  /// Spins, before parking until `answered()` is true, while the loop running the coroutine
  /// has nothing else to do (see `CoroutineLoop.spinForAnswer`); stops early on cancellation.
  /// The caller looks at its answer again afterwards.
  @usableFromInline
  func spinForAnswer(_ answered: () -> Bool) {
    guard let loop = loopRunningHereUnretained else { return }
    loop._withUnsafeGuaranteedRef { $0.spinForAnswer { answered() || isCancelled } }
  }

  /// True while the wait of `generation` is armed and unclaimed.
  func isWaiting(_ generation: UInt64) -> Bool {
    waitWord.load(ordering: .acquiring) == generation << 1 | 1
  }

  /// Switches out and lets the scheduler run the coroutine again, on `target` from now on.
  func hop(to target: any CoroutineScheduler) {
    scheduler = target
    yieldToScheduler()
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

  // MARK: Waking (any thread)

  /// Claims the wait of `generation`; only one claim per wait succeeds.
  @usableFromInline
  func claim(_ generation: UInt64) -> Bool {
    // A plain load first: most late claims (a resumer released after its wait ended) fail,
    // and a failing compare-and-swap still costs a locked instruction.
    guard waitWord.load(ordering: .relaxed) == generation << 1 | 1 else { return false }
    return waitWord.compareExchange(
      expected: generation << 1 | 1, desired: generation << 1, ordering: .acquiringAndReleasing
    ).exchanged
  }

  /// Wakes the coroutine after a successful `claim`.
  @usableFromInline
  func wake() {
    // A plain load first: the claim just took the state's cache line (see `waitWord`), and a
    // swap that failed for the wrong guess still cost a locked instruction.
    var now = state.load(ordering: .relaxed)
    while true {
      let next: CoroutineState
      switch now {
      case .suspended: next = .scheduled
      case .running: next = .wokenEarly
      // Watched by its idle loop. A loop's thread queues it as usual (beside itself, for a
      // coroutine of its group), and the watch ends; any other thread hands it over.
      case .watched: next = cu_tls_current_loop() == nil ? .handedOver : .scheduled
      default: coStop("a \(now) coroutine cannot be woken")
      }
      let (exchanged, found) = state.compareExchange(
        expected: now, desired: next, ordering: .acquiringAndReleasing)
      if exchanged {
        if next == .scheduled { enqueueResume() }
        return
      }
      // It parked, or was watched, or its watch ended, meanwhile: try again.
      now = found
    }
  }

  /// Marks the coroutine cancelled and ends its pending wait, which then throws
  /// `CancellationError`.
  func cancel() {
    guard !cancelled.exchange(true, ordering: .sequentiallyConsistent) else { return }
    let word = waitWord.load(ordering: .sequentiallyConsistent)
    if word & 1 == 1, claim(word >> 1) { wake() }
  }

  // MARK: State

  private func compareAndSwap(_ expected: CoroutineState, _ desired: CoroutineState) -> Bool {
    state.compareExchange(expected: expected, desired: desired, ordering: .acquiringAndReleasing)
      .exchanged
  }

  /// Applies `event`; an illegal event is a bug in the runtime and stops the process.
  ///
  /// A plain store, not a compare-and-swap: only the thread driving the coroutine applies these
  /// events, and no waker can change the state meanwhile. A waker changes it only after
  /// claiming an armed wait, and every event here happens with no wait armed, or after the
  /// waker's own change (the `.park` of a coroutine woken early). The one transition that
  /// races with wakers, running → suspended, is the compare-and-swap in `switchedBack`.
  private func transition(_ event: CoroutineState.Event) {
    let current = state.load(ordering: .acquiring)
    guard let next = current.after(event) else { illegal(event, from: current) }
    state.store(next, ordering: .releasing)
  }

  private func illegal(_ event: CoroutineState.Event, from state: CoroutineState) -> Never {
    coStop(
      "coroutine \(name ?? "(unnamed)"): \(IllegalCoroutineTransition(state: state, event: event))")
  }
}

/// The first frame of every coroutine, called by the C trampoline on the new stack. It returns
/// to the trampoline once the body is done, so no Swift frame is left on the stack.
private let coroutineEntry: cu_fiber_entry = { argument in
  // Unretained: the coroutine holds a reference to itself until it has finished.
  Unmanaged<Coroutine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.runBody() }
}
