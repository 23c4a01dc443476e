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
  enum Exit { case park, reschedule, handBack, finish }

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
  let homeReference: Home

  enum Home {
    case retained(any CoroutineScheduler)
    /// A group that a child inherited from its parent, unretained: a coroutine that counts as
    /// live keeps the group's loops, whose threads hold the group, from ending. A strong
    /// reference cost each launch and each destruction an atomic on the group's count, which
    /// every loop of the group fought over.
    case group(Unmanaged<CoroutineLoopGroup>)
  }
  /// Where the coroutine resumes now: `home`, except while it hops for `co_await(on:)`.
  var scheduler: any CoroutineScheduler {
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
  var away: (any CoroutineScheduler)?
  /// `scheduler` when it is a loop, unretained (`scheduler` keeps it alive): enqueueing a
  /// resumption then costs no retain. For a coroutine of a group, the group's loop it runs on
  /// (or last ran on).
  var loop: Unmanaged<CoroutineLoop>?

  /// The async layer's record of this coroutine (its task, which knows its parent and
  /// children): set before the coroutine starts, cleared once it has finished, read only by
  /// code running on the coroutine. The runtime itself never looks at it. Typed, not `AnyObject`:
  /// casting to `any TaskNode` at each launch searched the conformance tables.
  // usableFromInline: set by the inlinable launch. Unchecked: only the task's launch and finish
  // and the coroutine's own code touch it, one after another, and no access calls out.
  @usableFromInline @exclusivity(unchecked) var attachment: (any TaskNode)?
  /// The coroutine-local bindings (see `CoLocal`), given at creation (a launch passes the
  /// launcher's) and changed only by the coroutine's own code; the runtime never looks inside.
  // `Optional<…>` spelled out: a `T?` property starts as nil before `init` assigns it, and
  // that first assignment released the nil. Given to `init` rather than stored after it: a
  // store after the record was made retained and released the record around the call that
  // looked the launcher's bindings up.
  @usableFromInline @exclusivity(unchecked) var locals: Optional<AnyObject>

  var fiber: OpaquePointer?
  /// Where callbacks running on this coroutine leave the work they start (see ``Trampoline``),
  /// while they run; touched only by code on this coroutine.
  var trampoline: Trampoline?
  /// The next entry of the loop inbox this coroutine waits in to be resumed or started (see
  /// `RemoteInbox`): written by the thread that queues it, read by the loop that takes it.
  @exclusivity(unchecked) var inboxNext: UInt = 0
  /// Links and counters of the live-coroutine registry (dumps, the stall watchdog).
  let registryEntry = CoroutineRegistryEntry()
  /// The body until it starts; then, once it has returned, what publishes its outcome.
  var work: Work

  enum Work {
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

  // The one-byte fields that need not be near the state fill the seven bytes that `work`
  // leaves in its last word: after the state, they pushed the record a few bytes past a malloc
  // size class (233 bytes, in a 256-byte chunk), and a burst of a million pending launches
  // faulted in 16 MB more.
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
  let roams: Bool
  /// True while the coroutine waits in its loop's own timers or poller: it must resume on that
  /// loop, which alone may touch them (see `pinned(_:)`).
  var isPinned = false
  /// Set by the loop when a `co_delay` sleep reaches its deadline, before it wakes the
  /// coroutine; a sleep woken without it was cancelled.
  var sleepRang = false
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
  let waitWord = Atomic<UInt64>(0)
  let state: Atomic<CoroutineState>
  var exit = Exit.finish
  // The 32-bit fields after the last one-byte ones.
  /// How many times `scheduler` has changed: with the coroutine's address, a cheap key for
  /// what was worked out from its scheduler (see InlineDriver).
  private(set) var schedulerChanges: UInt32 = 0
  /// `stackSize`, in 32 bits beside the other small fields: no stack exceeds
  /// `CoroutineStack.maximumSize` (1 GiB), and the word it saves holds `trampoline` (with
  /// `locals`, the record still fits the loop's prefetch, `prefetchBytes`).
  let stackBytes: UInt32
  /// `home` as the loop that counts its coroutines, cast once; unretained (see AccountingLoop).
  /// Last: its optional's tag byte would otherwise leave seven bytes of padding.
  let accounting: AccountingLoop?

  /// Creates a coroutine that runs `body` on `scheduler`, with the coroutine-local bindings
  /// `locals`; nothing runs until `start()`. `body` returns the closure that publishes its
  /// outcome, called once the coroutine is off its stack.
  @usableFromInline
  init(
    scheduler: any CoroutineScheduler, name: String?, stackSize: Int, sharedStack: Bool = false,
    locals: consuming AnyObject? = nil, body: @escaping () -> (() -> Void)
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
    self.locals = consume locals
    // Moved in, not copied: a copy made the specialised body retain them and its caller's
    // thunk release them again (a pair of calls each per launch).
    self.work = .body(consume body)
    self.homeReference = .retained(consume scheduler)
    CoroutineRegistry.coroutineCreated(self, accounting: accounting)
  }

  /// Creates a coroutine of `group` launched without a scheduler by one of the group's own
  /// coroutines, which keeps the group alive meanwhile (see `Home.group`), with the
  /// coroutine-local bindings `locals`.
  ///
  /// A second designated initializer rather than both delegating to one taking the home, the
  /// loop and the accounting: that one cost every launch about 60 instructions more (measured
  /// with callgrind on `bench --figure spawn`).
  @usableFromInline
  init(
    inheriting group: Unmanaged<CoroutineLoopGroup>, name: String?, stackSize: Int,
    sharedStack: Bool, locals: consuming AnyObject?, body: @escaping () -> (() -> Void)
  ) {
    self.name = name
    self.stackBytes = UInt32(stackSize)
    self.usesSharedStack = sharedStack
    self.away = nil
    self.loop = group._withUnsafeGuaranteedRef { $0.placementLoop() }
    self.roams = !sharedStack
    self.state = Atomic(.created)
    self.accounting = AccountingLoop(group: group)
    self.locals = consume locals
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

  /// `home`'s address, to compare without retaining it.
  var homeAddress: UnsafeMutableRawPointer {
    switch homeReference {
    case .retained(let scheduler):
      return Unmanaged.passUnretained(scheduler as AnyObject).toOpaque()
    case .group(let group): return group.toOpaque()
    }
  }
}
