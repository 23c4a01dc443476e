import CLinux
import CUContext

/// A unit of work on a loop: a closure, or a coroutine to resume or to start (no closure
/// allocated, and no retain: a started coroutine keeps itself alive until it finishes, and one
/// launched with a task is kept alive by the task it is attached to until then).
enum LoopJob {
  case closure(@Sendable () -> Void)
  case resume(Unmanaged<Coroutine>)
  case start(Unmanaged<Coroutine>)

  /// Runs the job. Always inlined into the loop's own frame, which calls `cu_fiber_resume`
  /// itself: a frame of its own spanning the switch would return through a mispredicted `ret`
  /// each time the coroutine switched back (see "Switching" in Coroutine.swift).
  @inline(__always)
  func run(on loop: UnsafeMutableRawPointer) {
    switch self {
    case .closure(let job): job()
    case .resume(let coroutine):
      let fiber = coroutine._withUnsafeGuaranteedRef { $0.fiberForResume() }
      cu_fiber_resume(fiber, coroutine.toOpaque())
      _ = coroutine._withUnsafeGuaranteedRef { $0.switchedBack(resumedBy: loop) }
    case .start(let coroutine): coroutine._withUnsafeGuaranteedRef { $0.startAttached() }
    }
  }
}

/// A FIFO ring buffer that grows by doubling and never shrinks below what it once held, so a
/// loop in steady state allocates nothing per job.
///
/// Raw storage rather than an array: jobs are moved in and out of their slots (a copy costs a
/// retain now and a release later), and no uniqueness check or optional wrapper is paid per
/// job. Noncopyable, because it owns that storage.
struct JobQueue: ~Copyable {
  private var storage: UnsafeMutablePointer<LoopJob>
  private var capacity: Int
  private var head = 0
  private(set) var count = 0

  init() {
    capacity = 16
    storage = .allocate(capacity: capacity)
  }

  deinit {
    for offset in 0..<count { (storage + slot(offset)).deinitialize(count: 1) }
    storage.deallocate()
  }

  var isEmpty: Bool {
    @_transparent get { count == 0 }
  }

  @_transparent
  private func slot(_ offset: Int) -> Int { (head &+ offset) & (capacity &- 1) }

  mutating func append(_ job: consuming LoopJob) {
    if count == capacity { grow() }
    (storage + slot(count)).initialize(to: job)
    count &+= 1
  }

  /// Moves the last `count` jobs, in their order, before all the others.
  mutating func moveLastToFront(_ moving: Int) {
    for _ in 0..<min(moving, count) {
      let job = (storage + slot(count &- 1)).move()
      head = (head &- 1) & (capacity &- 1)
      (storage + head).initialize(to: job)
    }
  }

  mutating func popFirst() -> LoopJob? {
    guard count > 0 else { return nil }
    let job = (storage + head).move()
    head = (head &+ 1) & (capacity &- 1)
    count &-= 1
    return job
  }

  /// Warms the caches for the coroutines about to be resumed, in stages so that each step reads
  /// only what an earlier one fetched: the records of the coroutines eight to eleven jobs ahead,
  /// the saved contexts of those four to seven ahead (their addresses are in the records), the
  /// frames of the one two ahead (their address is in its context). With thousands of
  /// coroutines waking in turn, every one is otherwise a chain of cache misses on its record,
  /// its context and its stack.
  ///
  /// Records and contexts are asked for four at a time, every fourth job (`batchStart`): each
  /// context lies on its own stack's page, so its first touch waits for a page-table walk, and
  /// the processor walks for several prefetches at once only when they come together.
  func prefetchUpcoming(batchStart: Bool) {
    guard count > 2 else { return }  // each stage looks two jobs ahead or more
    if batchStart {
      for offset in 8..<12 {
        guard let coroutine = coroutine(at: offset) else { break }
        cu_prefetch_bytes(coroutine.toOpaque(), Coroutine.prefetchBytes)
      }
      for offset in 4..<8 {
        guard let coroutine = coroutine(at: offset) else { break }
        coroutine._withUnsafeGuaranteedRef { $0.prefetchContext() }
      }
    }
    if let coroutine = coroutine(at: 2) {
      coroutine._withUnsafeGuaranteedRef { $0.prefetchFrames() }
    }
  }

  private func coroutine(at offset: Int) -> Unmanaged<Coroutine>? {
    guard offset < count, case .resume(let coroutine) = storage[slot(offset)] else { return nil }
    return coroutine
  }

  /// Moves every job of `other` to the end of this queue, in order.
  mutating func takeAll(from other: inout JobQueue) {
    while let job = other.popFirst() { append(job) }
  }

  private mutating func grow() {
    let bigger = UnsafeMutablePointer<LoopJob>.allocate(capacity: capacity * 2)
    for offset in 0..<count {
      (bigger + offset).moveInitialize(from: storage + slot(offset), count: 1)
    }
    storage.deallocate()
    storage = bigger
    capacity *= 2
    head = 0
  }
}

extension Coroutine {
  /// Bytes of a coroutine's record, for prefetching all of it (200 on x86_64 today, with the
  /// trampoline and coroutine-local fields: four cache lines; a test checks that this still
  /// covers it).
  static let prefetchBytes = 256
}
