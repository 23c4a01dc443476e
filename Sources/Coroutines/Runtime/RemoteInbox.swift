import Synchronization

/// The jobs other threads leave for a loop: a lock-free stack that any thread pushes onto with
/// one compare-and-swap and the loop empties with one exchange, restoring their order.
///
/// Intrusive, so that a wake-up allocates nothing: a coroutine to resume or start is linked
/// through its own record (`Coroutine.inboxNext`; a coroutine is queued at most once at a time),
/// and only a closure gets a node. An entry is an object's address with its kind in the low bits
/// (objects are aligned to 16 bytes).
struct RemoteInbox: ~Copyable {
  private let head = Atomic<UInt>(0)

  private static let start: UInt = 1
  private static let closure: UInt = 2
  private static let kindMask: UInt = 3
  /// What a closed inbox holds (see `close()`): no entry, as no object lives at address 0.
  private static let closedMark: UInt = 4

  /// What became of a pushed job.
  enum Push: Equatable {
    /// Queued, with nothing else waiting before it.
    case first
    /// Queued behind other jobs.
    case behind
    /// Refused, and dropped: the inbox was closed.
    case refused
  }

  /// True when nothing waits. Sequentially consistent, like the pushes: a loop that marks
  /// itself asleep and then finds the inbox empty is seen asleep by the next pusher.
  var isEmpty: Bool { head.load(ordering: .sequentiallyConsistent) == 0 }

  /// A cheaper look for a loop that spins: it only needs to notice soon.
  var mayHoldWork: Bool { head.load(ordering: .relaxed) != 0 }

  /// Pushes `job` (any thread), unless the inbox was closed: then the job is dropped (a
  /// closure's node released) and the caller, told so, handles the refusal.
  @discardableResult
  func push(_ job: consuming LoopJob) -> Push {
    let entry: UInt
    switch consume job {
    case .resume(let coroutine): entry = UInt(bitPattern: coroutine.toOpaque())
    case .start(let coroutine): entry = UInt(bitPattern: coroutine.toOpaque()) | Self.start
    case .closure(let body):
      entry = UInt(bitPattern: Unmanaged.passRetained(InboxClosure(body)).toOpaque()) | Self.closure
    }
    var old = head.load(ordering: .relaxed)
    while true {
      if old == Self.closedMark {
        _ = Self.job(entry)
        return .refused
      }
      Self.setNext(of: entry, to: old)
      let (exchanged, found) = head.compareExchange(
        expected: old, desired: entry, ordering: .sequentiallyConsistent)
      if exchanged { return old == 0 ? .first : .behind }
      old = found
    }
  }

  /// Closes the inbox for good if it is empty: every later push is refused. False, changing
  /// nothing, when a job waits. Only for the inbox of a loop whose thread is leaving its run
  /// for the last time (a group's loop): nothing may take from it afterwards. The push that
  /// finds the inbox open is the one the loop takes, so of a job and the end, one comes first
  /// and no job is left behind unseen.
  func close() -> Bool {
    head.compareExchange(expected: 0, desired: Self.closedMark, ordering: .sequentiallyConsistent)
      .exchanged
  }

  /// Moves every waiting job to the end of `queue`, oldest first (the loop's thread only).
  func takeAll(into queue: inout JobQueue) {
    takeAll { queue.append($0) }
  }

  /// Takes every waiting job, oldest first, handing each to `body`. Any thread may, as the
  /// exchange gives each list to one taker.
  func takeAll(_ body: (consuming LoopJob) -> Void) {
    var entry = head.exchange(0, ordering: .acquiring)
    guard entry != 0 else { return }
    // Newest first as pushed: reverse the links, then walk them.
    var reversed: UInt = 0
    while entry != 0 {
      let next = Self.next(of: entry)
      Self.setNext(of: entry, to: reversed)
      reversed = entry
      entry = next
    }
    while reversed != 0 {
      let next = Self.next(of: reversed)
      body(Self.job(reversed))
      reversed = next
    }
  }

  private static func object(_ entry: UInt) -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(bitPattern: entry & ~kindMask)!
  }

  private static func next(of entry: UInt) -> UInt {
    if entry & kindMask == closure {
      return Unmanaged<InboxClosure>.fromOpaque(object(entry))._withUnsafeGuaranteedRef {
        $0.next
      }
    }
    return Unmanaged<Coroutine>.fromOpaque(object(entry))._withUnsafeGuaranteedRef {
      $0.inboxNext
    }
  }

  private static func setNext(of entry: UInt, to next: UInt) {
    if entry & kindMask == closure {
      Unmanaged<InboxClosure>.fromOpaque(object(entry))._withUnsafeGuaranteedRef {
        $0.next = next
      }
    } else {
      Unmanaged<Coroutine>.fromOpaque(object(entry))._withUnsafeGuaranteedRef {
        $0.inboxNext = next
      }
    }
  }

  /// The job of an entry taken out of the inbox; a closure's node is released.
  private static func job(_ entry: UInt) -> LoopJob {
    switch entry & kindMask {
    case start: return .start(Unmanaged.fromOpaque(object(entry)))
    case closure:
      return .closure(Unmanaged<InboxClosure>.fromOpaque(object(entry)).takeRetainedValue().body)
    default: return .resume(Unmanaged.fromOpaque(object(entry)))
    }
  }
}

/// A closure waiting in a loop's ``RemoteInbox``.
private final class InboxClosure {
  let body: @Sendable () -> Void
  /// The entry pushed before this one; written by the pusher before its compare-and-swap and
  /// read by the loop after its exchange, which order the two.
  var next: UInt = 0

  init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
