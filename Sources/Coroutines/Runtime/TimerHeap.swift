import CUContext
import Synchronization

/// A timer on a loop. Cancelling marks it; the loop drops marked timers when they surface.
final class LoopTimer: CoroutineTimer, Sendable {
  let deadline: UInt64
  /// Its place among timers of the same deadline, on a heap of timers themselves
  /// (`CoroutineTestLoop`); a `CoroutineLoop` numbers its heap's entries itself.
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
struct TimerHeap<Entry: TimerOrdered> {
  private var entries: [Entry] = []
  /// Timers in order.
  private var run = FIFO<Entry>()
  /// The key of the run's last timer (meaningless while the run is empty), kept apart so that
  /// an insertion compares with it without touching that timer.
  private var runLast = Key(deadline: 0, sequence: 0)

  private struct Key: Comparable {
    let deadline: UInt64
    let sequence: UInt64

    init(deadline: UInt64, sequence: UInt64) {
      self.deadline = deadline
      self.sequence = sequence
    }

    init(_ entry: borrowing Entry) {
      deadline = entry.deadline
      sequence = entry.sequence
    }

    /// Earlier deadline first; equal deadlines in the order they were added.
    static func < (a: Key, b: Key) -> Bool { (a.deadline, a.sequence) < (b.deadline, b.sequence) }
  }

  var isEmpty: Bool { entries.isEmpty && run.isEmpty }
  /// How many timers are waiting (for tests).
  var count: Int { entries.count + run.count }

  /// The first timer (a copy: use ``withFirst(_:)`` on hot paths).
  var first: Entry? { mutating get { withFirst { copy $0 } } }

  /// The first timer's deadline, without touching the timer's object.
  ///
  /// This and the other accessors that look at entries in place are `mutating`: called on a
  /// heap stored in a class (the loop's), a non-mutating call works on a copy, which retains
  /// and releases both arrays' buffers, two pairs of locked instructions per call on the path
  /// of every timed wake-up; a mutating one works on the stored heap itself.
  var firstDeadline: UInt64? {
    mutating get { withFirst { $0.deadline } }
  }

  /// Calls `body` with the first timer in place, or returns nil when there is none.
  mutating func withFirst<R>(_ body: (borrowing Entry) -> R) -> R? {
    switch firstPlace {
    case .none: nil
    case .heap: entries.withUnsafeBufferPointer { body($0[0]) }
    case .run: run.withElement(body)
    }
  }

  /// Calls `body` with the timer `offset` places behind the run's head, in place, or returns nil
  /// when the run is shorter: for warming the caches ahead of the timers about to fire (most of
  /// which are in the run).
  mutating func withQueued<R>(at offset: Int, _ body: (borrowing Entry) -> R) -> R? {
    run.withElement(at: offset, body)
  }

  private enum Place { case none, heap, run }

  /// Which head holds the first timer.
  private var firstPlace: Place {
    guard let runFirst = run.withElement({ Key($0) }) else {
      return entries.isEmpty ? .none : .heap
    }
    if entries.isEmpty { return .run }
    return entries.withUnsafeBufferPointer { Key($0[0]) } < runFirst ? .heap : .run
  }

  mutating func insert(_ entry: consuming Entry) {
    let key = Key(entry)
    // Due no earlier than the run's last (or the run is empty): it joins the run.
    if run.isEmpty || !(key < runLast) {
      runLast = key
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
    switch firstPlace {
    case .none: nil
    case .heap: removeFirstOfHeap()
    case .run: run.popFirst()
    }
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

  private static func isEarlier(_ heap: UnsafeMutableBufferPointer<Entry>, _ i: Int, _ j: Int)
    -> Bool
  {
    Key(heap[i]) < Key(heap[j])
  }
}
