import Synchronization

/// A timer on a loop. Cancelling marks it; the loop drops marked timers when they surface.
final class LoopTimer: CoroutineTimer, Sendable {
  let deadline: UInt64
  let sequence: UInt64
  let job: @Sendable () -> Void
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

  /// Stops the timer's job from running, if it has not run yet.
  func cancel() {
    if !done.exchange(true, ordering: .acquiringAndReleasing) { onCancel() }
  }

  /// Claims the timer for firing; false if it was cancelled (or already fired).
  func claimForFiring() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }

  var isCancelled: Bool { done.load(ordering: .acquiring) }

  /// Earlier deadline first; equal deadlines in the order they were added.
  func fires(before other: LoopTimer) -> Bool {
    (deadline, sequence) < (other.deadline, other.sequence)
  }
}

/// A binary min-heap of timers ordered by deadline, then by insertion.
struct TimerHeap {
  private var timers: [LoopTimer] = []

  var isEmpty: Bool { timers.isEmpty }
  var first: LoopTimer? { timers.first }

  mutating func insert(_ timer: LoopTimer) {
    timers.append(timer)
    var child = timers.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard timers[child].fires(before: timers[parent]) else { break }
      timers.swapAt(child, parent)
      child = parent
    }
  }

  mutating func removeFirst() -> LoopTimer? {
    guard !timers.isEmpty else { return nil }
    timers.swapAt(0, timers.count - 1)
    let first = timers.removeLast()
    var parent = 0
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var smallest = parent
      if left < timers.count, timers[left].fires(before: timers[smallest]) { smallest = left }
      if right < timers.count, timers[right].fires(before: timers[smallest]) { smallest = right }
      guard smallest != parent else { break }
      timers.swapAt(parent, smallest)
      parent = smallest
    }
    return first
  }
}
