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

/// What a timer heap orders.
protocol TimerOrdered {
  /// True when `self` is due before `other`.
  func fires(before other: Self) -> Bool
}

extension LoopTimer: TimerOrdered {}
extension TimerEntry: TimerOrdered {}

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

  init(_ timer: LoopTimer) {
    deadline = timer.deadline
    sequence = timer.sequence
    action = .timer(timer)
  }

  init(sleeping coroutine: Coroutine, generation: UInt64, deadline: UInt64, sequence: UInt64) {
    self.deadline = deadline
    self.sequence = sequence
    action = .sleep(coroutine, generation)
  }

  /// True once nothing can come of the entry: its timer was cancelled, or the sleep it stood
  /// for has already ended (cancelled).
  var isDead: Bool {
    switch action {
    case .timer(let timer): timer.isCancelled
    case .sleep(let coroutine, let generation): !coroutine.isWaiting(generation)
    }
  }

  /// Earlier deadline first; equal deadlines in the order they were added.
  func fires(before other: TimerEntry) -> Bool {
    (deadline, sequence) < (other.deadline, other.sequence)
  }
}

/// A binary min-heap of timers ordered by deadline, then by insertion.
struct TimerHeap<Entry: TimerOrdered> {
  private var entries: [Entry] = []

  var isEmpty: Bool { entries.isEmpty }
  var first: Entry? { entries.first }

  mutating func insert(_ entry: Entry) {
    entries.append(entry)
    var child = entries.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard entries[child].fires(before: entries[parent]) else { break }
      entries.swapAt(child, parent)
      child = parent
    }
  }

  mutating func removeFirst() -> Entry? {
    guard !entries.isEmpty else { return nil }
    entries.swapAt(0, entries.count - 1)
    let first = entries.removeLast()
    var parent = 0
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var smallest = parent
      if left < entries.count, entries[left].fires(before: entries[smallest]) { smallest = left }
      if right < entries.count, entries[right].fires(before: entries[smallest]) {
        smallest = right
      }
      guard smallest != parent else { break }
      entries.swapAt(parent, smallest)
      parent = smallest
    }
    return first
  }
}
