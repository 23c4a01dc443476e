import Synchronization

/// A loop group's count of live coroutines, kept by each of its threads on a cache line of its
/// own: how many coroutines the thread created and how many finished on it. A group thread counts
/// with a plain load and a store (it is the only writer of its tally); one shared counter cost
/// every launch and every finish a locked instruction on a line that all the group's threads
/// fought over. Threads outside the group count on a tally of their own with atomic additions.
/// The sum is only read to decide whether a shut-down group may end, which is rare.
struct LiveTally: ~Copyable {
  let created = Atomic<Int>(0)
  let finished = Atomic<Int>(0)
  /// To 64 bytes; tallies are allocated 64-byte aligned (see `allocate(_:)`).
  private let padding: (Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0)

  /// `count` tallies, each on a cache line of its own. Free them with `deallocate()`.
  static func allocate(_ count: Int) -> UnsafeMutablePointer<LiveTally> {
    let tallies = UnsafeMutableRawPointer.allocate(
      byteCount: MemoryLayout<LiveTally>.stride * count, alignment: 64
    ).bindMemory(to: LiveTally.self, capacity: count)
    for index in 0..<count { (tallies + index).initialize(to: LiveTally()) }
    return tallies
  }

  /// A coroutine was created (`finished` false) or finished (true) on the tally's own thread.
  func countHere(finished: Bool) {
    if finished { Self.bump(self.finished) } else { Self.bump(created) }
  }

  /// One more, by the counter's only writer: a load and a store, no locked instruction.
  private static func bump(_ count: borrowing Atomic<Int>) {
    count.store(count.load(ordering: .relaxed) &+ 1, ordering: .releasing)
  }

  /// The same, on a tally that several threads share.
  func countShared(finished: Bool) {
    if finished {
      self.finished.add(1, ordering: .sequentiallyConsistent)
    } else {
      created.add(1, ordering: .sequentiallyConsistent)
    }
  }

  /// Coroutines created and not finished, over `count` tallies. Every finish it sees had its
  /// creation counted before it (the coroutine passed from its creator to where it finished), so
  /// a sum of zero means that no coroutine counted so far is still live.
  static func sum(_ tallies: UnsafeMutablePointer<LiveTally>, count: Int) -> Int {
    var finished = 0
    var created = 0
    for index in 0..<count {
      finished &+= tallies[index].finished.load(ordering: .sequentiallyConsistent)
    }
    for index in 0..<count {
      created &+= tallies[index].created.load(ordering: .sequentiallyConsistent)
    }
    return created &- finished
  }
}
