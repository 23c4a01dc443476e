/// A unit of work on a loop: a closure, or a coroutine to resume (no closure allocated).
enum LoopJob {
  case closure(@Sendable () -> Void)
  case resume(Coroutine)

  func run() {
    switch self {
    case .closure(let job): job()
    case .resume(let coroutine): coroutine.resume()
    }
  }
}

/// A FIFO ring buffer that grows by doubling and never shrinks, so a loop in steady state
/// allocates nothing per job.
///
/// Raw memory rather than an array: every job passes through here (two per channel ping-pong
/// round trip), and the array's uniqueness check, bounds checks and optional slots cost about
/// 150 instructions per job (callgrind); moving in and out of raw slots costs a handful.
/// Noncopyable, because it owns its memory.
struct JobQueue: ~Copyable {
  private var slots: UnsafeMutablePointer<LoopJob>
  private var capacity: Int
  private var head = 0
  private(set) var count = 0

  init() {
    capacity = 16
    slots = .allocate(capacity: capacity)
  }

  deinit {
    for index in 0..<count { (slots + ((head + index) & (capacity - 1))).deinitialize(count: 1) }
    slots.deallocate()
  }

  var isEmpty: Bool { count == 0 }

  /// `consuming`, and the moves below, hand the job over instead of copying it: a copy costs a
  /// retain now and a release when the slot is cleared.
  mutating func append(_ job: consuming LoopJob) {
    if count == capacity { grow() }
    (slots + ((head + count) & (capacity - 1))).initialize(to: job)
    count += 1
  }

  mutating func popFirst() -> LoopJob? {
    guard count > 0 else { return nil }
    let job = (slots + head).move()
    head = (head + 1) & (capacity - 1)
    count -= 1
    return job
  }

  /// Moves every job of `other` to the end of this queue, in order.
  mutating func takeAll(from other: inout JobQueue) {
    while let job = other.popFirst() { append(job) }
  }

  private mutating func grow() {
    let bigger = UnsafeMutablePointer<LoopJob>.allocate(capacity: capacity * 2)
    for index in 0..<count {
      (bigger + index).moveInitialize(from: slots + ((head + index) & (capacity - 1)), count: 1)
    }
    slots.deallocate()
    slots = bigger
    capacity *= 2
    head = 0
  }
}
