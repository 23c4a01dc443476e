import CLinux
import CUContext
import Synchronization

/// A timer on a loop. Cancelling marks it and releases its job at once; the loop drops marked
/// timers when they surface, or sooner when they crowd its heap (see
/// ``TimerHeap/compact(liveAtMost:)``).
final class LoopTimer: CoroutineTimer, Sendable {
  let deadline: UInt64
  /// Its place among timers of the same deadline, on a heap of timers themselves
  /// (`CoroutineTestLoop`); a `CoroutineLoop` numbers its heap's entries itself.
  let sequence: UInt64
  /// The job, until the timer fires or is cancelled. Whoever wins `done` alone touches it after
  /// that: firing takes it to run, cancelling releases it, so what it captured (a timeout's
  /// waiting coroutine) goes at once rather than when the timer would have rung. The exchange
  /// orders those accesses; the creator's write is published with the timer.
  nonisolated(unsafe) private var job: (@Sendable () -> Void)?
  private let done = Atomic<Bool>(false)
  private let onCancel: @Sendable () -> Void

  init(
    deadline: UInt64, sequence: UInt64, job: @escaping @Sendable () -> Void,
    onCancel: @escaping @Sendable () -> Void
  ) {
    self.deadline = deadline
    self.sequence = sequence
    self.job = job
    self.onCancel = onCancel
  }

  /// Stops the timer's job from running, if it has not run yet, and releases it.
  func cancel() {
    guard !done.exchange(true, ordering: .acquiringAndReleasing) else { return }
    job = nil
    onCancel()
  }

  /// Claims the timer for firing and takes its job; nil if it was cancelled (or already fired).
  func claimJob() -> (@Sendable () -> Void)? {
    guard !done.exchange(true, ordering: .acquiringAndReleasing) else { return nil }
    return job.take()
  }

  var isCancelled: Bool { done.load(ordering: .acquiring) }
}

/// What waits in a loop's timer heap: a timer's job, or a coroutine asleep in `co_delay`
/// (woken directly, so a delay allocates nothing).
struct TimerEntry {
  enum Action {
    case timer(LoopTimer)
    /// The coroutine and the generation of the wait its `co_delay` armed.
    case sleep(Coroutine, UInt64)
  }

  let deadline: UInt64
  let sequence: UInt64
  let action: Action

  /// The entry of `timer`, numbered `sequence` among the entries of its heap.
  init(_ timer: LoopTimer, sequence: UInt64) {
    deadline = timer.deadline
    self.sequence = sequence
    action = .timer(timer)
  }

  init(sleeping coroutine: Coroutine, generation: UInt64, deadline: UInt64, sequence: UInt64) {
    self.deadline = deadline
    self.sequence = sequence
    action = .sleep(coroutine, generation)
  }

  /// The timer the entry fires, if it is a timer's (not a sleep's).
  var timer: LoopTimer? {
    if case .timer(let timer) = action { return timer }
    return nil
  }

  /// Asks the processor for the object the entry fires on (its timer, or its coroutine's
  /// record), which firing reads and writes.
  func prefetch() {
    switch action {
    case .timer(let timer):
      cu_prefetch(Unmanaged.passUnretained(timer).toOpaque())
    case .sleep(let coroutine, _):
      cu_prefetch_bytes(Unmanaged.passUnretained(coroutine).toOpaque(), Coroutine.prefetchBytes)
    }
  }

  /// True once nothing can come of the entry: its timer was cancelled, or the sleep it stood
  /// for has already ended (cancelled).
  var isDead: Bool {
    switch action {
    case .timer(let timer): timer.isCancelled
    case .sleep(let coroutine, let generation): !coroutine.isWaiting(generation)
    }
  }
}

/// Timers ordered by deadline, then by insertion: a binary min-heap, beside a first-in first-out
/// run for timers that arrive in order.
///
/// Nothing here copies an entry: sifting and choosing between the two heads compare the trivial
/// keys in place, and entries are moved in and out. A copy retains the entry's object and its
/// end releases it, and with ten thousand sleepers every such object is a cache miss: those
/// copies were most of the cost of a `co_delay`.
///
/// Most timers arrive in deadline order: every `co_delay(d)` with the same `d` is due after all
/// those armed before it. Such a timer is appended to the run, where adding and taking it cost
/// O(1) instead of a sift through the heap (14 levels for 10 000 sleepers); only a timer due
/// before the run's last one goes to the heap. The earlier of the two heads is the first timer.
///
/// Dead entries (cancelled timers, sleeps ended early) are dropped when they reach the front; one
/// behind a live timer due before it would wait for that timer, so when the heap grows past
/// twice what it held after its last look, its owner drops them all (see
/// ``compact(liveAtMost:)``): the heap never holds more than about three times the live timers
/// it held at that look, or ``fewestCrowded`` entries, at an amortised O(1) per insertion.
///
/// Concrete, not generic over its entries, and without closures: in a debug build a generic
/// container looks up its type's metadata in the runtime's tables and copies entries through
/// value witnesses on every operation, which made a loop's timers slower than Dispatch's. The
/// smallest helpers, here and in the ``Ring`` beneath, are `@_transparent`, the one kind of
/// function a debug build inlines (and makes concrete where it inlines it): as calls they cost
/// more than their bodies.
struct TimerHeap: ~Copyable {
  /// The heap, in its ring's slots from 0 (its head never moves).
  private var heap = TimerEntryRing()
  /// Timers in order.
  private var run = TimerEntryRing()
  /// The key of the run's last timer (meaningless while the run is empty), kept apart so that
  /// an insertion compares with it without touching that timer.
  private var runLast = Key(deadline: 0, sequence: 0)
  /// Above this many entries the heap is crowded: its owner should call
  /// ``compact(liveAtMost:)``.
  private var crowdedAbove = TimerHeap.fewestCrowded
  /// The size below which dead entries are left to surface: looking for them would cost more
  /// than they hold.
  static let fewestCrowded = 64

  private struct Key {
    let deadline: UInt64
    let sequence: UInt64

    @_transparent
    init(deadline: UInt64, sequence: UInt64) {
      self.deadline = deadline
      self.sequence = sequence
    }

    /// The key of the entry at `entry`, read in place.
    @_transparent
    init(_ entry: UnsafeMutablePointer<TimerEntry>) {
      deadline = entry.pointee.deadline
      sequence = entry.pointee.sequence
    }

    /// Earlier deadline first; equal deadlines in the order they were added.
    @_transparent
    func isBefore(_ other: Key) -> Bool {
      deadline != other.deadline ? deadline < other.deadline : sequence < other.sequence
    }
  }

  init() {}

  var isEmpty: Bool {
    @_transparent get { heap.isEmpty && run.isEmpty }
  }
  /// How many entries are waiting, dead ones included.
  var count: Int { heap.count &+ run.count }

  /// True when the heap has grown past twice what it held after its last look (and past
  /// ``fewestCrowded``): time for its owner to call ``compact(liveAtMost:)``. ``insert(_:)``
  /// returns it: asked there, while the counts are at hand, it cost a sleep 5 instructions;
  /// asked by the owner afterwards, 22.
  var isCrowded: Bool {
    @_transparent get { heap.count &+ run.count > crowdedAbove }
  }

  /// The first timer, in place (no copy: no retain of its object), or nil when there is none.
  /// Valid until the heap next changes.
  var first: UnsafeMutablePointer<TimerEntry>? {
    if run.isEmpty { return heap.isEmpty ? nil : heap.pointer(at: 0) }
    return firstIsInHeap ? heap.pointer(at: 0) : run.pointer(at: 0)
  }

  /// The first timer's deadline, without touching the timer's object.
  var firstDeadline: UInt64? {
    guard let first else { return nil }
    return first.pointee.deadline
  }

  /// True when the first timer is dead (see ``TimerEntry/isDead``); false when there is none.
  var firstIsDead: Bool {
    guard let first else { return false }
    return first.pointee.isDead
  }

  /// True when both heads hold a timer and the heap's is due first.
  private var firstIsInHeap: Bool {
    @_transparent get {
      !heap.isEmpty && !run.isEmpty && Key(heap.pointer(at: 0)).isBefore(Key(run.pointer(at: 0)))
    }
  }

  /// Warms the caches for the timer `offset` places behind the run's head, if the run is that
  /// long: for the timers about to fire, most of which are in the run.
  func prefetchQueued(at offset: Int) {
    guard offset < run.count else { return }
    run.pointer(at: offset).pointee.prefetch()
  }

  /// Adds `entry`; returns true when the heap is now crowded (see ``isCrowded``), for its owner
  /// to call ``compact(liveAtMost:)``.
  @discardableResult
  mutating func insert(_ entry: consuming TimerEntry) -> Bool {
    let key = Key(deadline: entry.deadline, sequence: entry.sequence)
    // Due no earlier than the run's last (or the run is empty): it joins the run.
    if run.isEmpty || !key.isBefore(runLast) {
      runLast = key
      run.append(entry)
      return isCrowded
    }
    heap.append(entry)
    var child = heap.count &- 1
    while child > 0 {
      let parent = (child &- 1) / 2
      guard isEarlier(child, parent) else { break }
      heap.swapAt(child, parent)
      child = parent
    }
    return isCrowded
  }

  /// Drops the dead entries of a crowded heap, when at most `live` of its entries can be live:
  /// Go's rule, when a quarter or more may be dead (fewer are not worth a pass over every
  /// entry, each a look at another object). Returns what it dropped, for the caller to release
  /// once the heap is whole again (a last release may run code that arms a timer on the same
  /// heap), or nil when it dropped nothing.
  ///
  /// Either way the heap is not crowded again until it holds twice its entries now, so the pass
  /// costs O(1) per insertion, amortised, and `live` (an upper bound the owner keeps anyway, so
  /// that a heap of live timers growing is not searched) need not be exact.
  mutating func compact(liveAtMost live: Int) -> TimerEntryRing? {
    let total = count
    guard (total &- live) &* 4 >= total else {
      crowdedAbove = Swift.max(Self.fewestCrowded, 2 &* total)
      return nil
    }
    var dead = TimerEntryRing()
    run.moveDead(into: &dead)
    heap.moveDead(into: &dead)
    // Floyd's construction: sift every parent down, from the last one up, in O(n).
    var parent = heap.count / 2 &- 1
    while parent >= 0 {
      siftDown(from: parent)
      parent &-= 1
    }
    if !run.isEmpty { runLast = Key(run.pointer(at: run.count &- 1)) }
    crowdedAbove = Swift.max(Self.fewestCrowded, 2 &* count)
    return dead
  }

  mutating func removeFirst() -> TimerEntry? {
    if run.isEmpty || firstIsInHeap { return removeFirstOfHeap() }
    return run.popFirst()
  }

  private mutating func removeFirstOfHeap() -> TimerEntry? {
    guard !heap.isEmpty else { return nil }
    heap.swapAt(0, heap.count &- 1)
    let first = heap.popLast()
    siftDown(from: 0)
    return first
  }

  /// Moves the heap's entry at `start` down until neither child is earlier.
  @_transparent
  private mutating func siftDown(from start: Int) {
    var parent = start
    while true {
      let left = 2 &* parent &+ 1
      let right = left &+ 1
      var earliest = parent
      if left < heap.count, isEarlier(left, earliest) { earliest = left }
      if right < heap.count, isEarlier(right, earliest) { earliest = right }
      guard earliest != parent else { break }
      heap.swapAt(parent, earliest)
      parent = earliest
    }
  }

  @_transparent
  private func isEarlier(_ i: Int, _ j: Int) -> Bool {
    Key(heap.pointer(at: i)).isBefore(Key(heap.pointer(at: j)))
  }
}

/// Timer entries in a ring: the storage of both parts of a ``TimerHeap``.
typealias TimerEntryRing = Ring<TimerEntry>

extension Ring where Element == TimerEntry {
  /// Moves every dead entry (see ``TimerEntry/isDead``) to the end of `dead`, keeping the others
  /// in their order.
  mutating func moveDead(into dead: inout Ring<TimerEntry>) {
    moveAll(where: { $0.isDead }, into: &dead)
  }
}
