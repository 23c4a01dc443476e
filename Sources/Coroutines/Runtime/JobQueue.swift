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

/// A FIFO ring buffer that grows by doubling and never shrinks below what it once held, so a
/// loop in steady state allocates nothing per job.
struct JobQueue {
  private var storage: [LoopJob?] = Array(repeating: nil, count: 16)
  private var head = 0
  private(set) var count = 0

  var isEmpty: Bool { count == 0 }

  /// `consuming`, and `take()` below, move jobs in and out of the ring instead of copying
  /// them: a copy costs a retain now and a release when the slot is cleared.
  mutating func append(_ job: consuming LoopJob) {
    if count == storage.count { grow() }
    storage[(head + count) & (storage.count - 1)] = job
    count += 1
  }

  mutating func popFirst() -> LoopJob? {
    guard count > 0 else { return nil }
    let job = storage[head].take()
    head = (head + 1) & (storage.count - 1)
    count -= 1
    return job
  }

  /// Moves every job of `other` to the end of this queue, in order.
  mutating func takeAll(from other: inout JobQueue) {
    while let job = other.popFirst() { append(job) }
  }

  private mutating func grow() {
    var bigger: [LoopJob?] = Array(repeating: nil, count: storage.count * 2)
    for index in 0..<count { bigger[index] = storage[(head + index) & (storage.count - 1)] }
    storage = bigger
    head = 0
  }
}
