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
}

/// What a timer heap orders: a deadline, then the order of insertion.
protocol TimerOrdered {
  var deadline: UInt64 { get }
  var sequence: UInt64 { get }
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
}

/// Timers ordered by deadline, then by insertion: a binary min-heap, beside a first-in first-out
/// run for timers that arrive in order.
///
/// Sifting compares only the trivial keys, in place through a buffer pointer: copying an entry
/// out to compare it would retain and release its object on every step, which was most of the
/// cost of a `co_delay` with ten thousand sleepers.
///
/// Most timers arrive in deadline order: every `co_delay(d)` with the same `d` is due after all
/// those armed before it. Such a timer is appended to the run, where adding and taking it cost
/// O(1) instead of a sift through the heap (14 levels for 10 000 sleepers); only a timer due
/// before the run's last one goes to the heap. The earlier of the two heads is the first timer.
struct TimerHeap<Entry: TimerOrdered> {
  private var entries: [Entry] = []
  /// Timers in order.
  private var run = FIFO<Entry>()

  var isEmpty: Bool { entries.isEmpty && run.isEmpty }
  /// How many timers are waiting (for tests).
  var count: Int { entries.count + run.count }

  var first: Entry? {
    guard let runFirst = run.first else { return entries.first }
    guard let heapFirst = entries.first else { return runFirst }
    return Self.isEarlier(heapFirst, than: runFirst) ? heapFirst : runFirst
  }

  mutating func insert(_ entry: Entry) {
    // Due no earlier than the run's last (or the run is empty): it joins the run.
    guard let runLast = run.last, Self.isEarlier(entry, than: runLast) else {
      run.append(entry)
      return
    }
    entries.append(entry)
    entries.withUnsafeMutableBufferPointer { heap in
      var child = heap.count - 1
      while child > 0 {
        let parent = (child - 1) / 2
        guard Self.isEarlier(heap, child, parent) else { break }
        heap.swapAt(child, parent)
        child = parent
      }
    }
  }

  mutating func removeFirst() -> Entry? {
    if let runFirst = run.first {
      if let heapFirst = entries.first, Self.isEarlier(heapFirst, than: runFirst) {
        return removeFirstOfHeap()
      }
      return run.popFirst()
    }
    return removeFirstOfHeap()
  }

  private mutating func removeFirstOfHeap() -> Entry? {
    guard !entries.isEmpty else { return nil }
    entries.swapAt(0, entries.count - 1)
    let first = entries.removeLast()
    entries.withUnsafeMutableBufferPointer { heap in
      var parent = 0
      while true {
        let left = 2 * parent + 1
        let right = left + 1
        var earliest = parent
        if left < heap.count, Self.isEarlier(heap, left, earliest) { earliest = left }
        if right < heap.count, Self.isEarlier(heap, right, earliest) { earliest = right }
        guard earliest != parent else { break }
        heap.swapAt(parent, earliest)
        parent = earliest
      }
    }
    return first
  }

  /// Earlier deadline first; equal deadlines in the order they were added.
  private static func isEarlier(_ heap: UnsafeMutableBufferPointer<Entry>, _ i: Int, _ j: Int)
    -> Bool
  {
    (heap[i].deadline, heap[i].sequence) < (heap[j].deadline, heap[j].sequence)
  }

  private static func isEarlier(_ a: Entry, than b: Entry) -> Bool {
    (a.deadline, a.sequence) < (b.deadline, b.sequence)
  }
}
