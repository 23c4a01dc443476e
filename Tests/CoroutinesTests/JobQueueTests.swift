import Synchronization
import Testing

@testable import Coroutines

/// The loop's ring of jobs: first in, first out, and jobs moved from its end to its front (or
/// behind its first few) keep their order (the coroutines a busy loop's look at its descriptors
/// woke).
@Suite struct JobQueueTests {
  @Test(arguments: [(5, 2), (5, 5), (3, 0), (20, 7), (0, 3)])
  func movingTheLastJobsToTheFrontKeepsTheirOrder(queued: Int, moved: Int) {
    for offset in Self.ringOffsets {
      let order = Self.order(of: queued, atRingOffset: offset) { $0.moveLastToFront(moved) }
      let moving = min(moved, queued)
      let expected = Array((queued - moving)..<queued) + Array(0..<(queued - moving))
      #expect(order == expected, "at ring offset \(offset)")
    }
  }

  /// The coroutines a look within a turn wakes go behind those an earlier look woke, which are
  /// at the front still, and before the rest.
  @Test(arguments: [(10, 3, 2), (10, 3, 0), (10, 3, 7), (6, 6, 0), (9, 2, 9), (12, 5, 4)])
  func movingTheLastJobsBehindTheFirstFewKeepsBothOrders(queued: Int, moved: Int, after: Int) {
    for offset in Self.ringOffsets {
      let order = Self.order(of: queued, atRingOffset: offset) { $0.moveLast(moved, after: after) }
      let moving = min(moved, queued)
      let staying = queued - moving
      let ahead = min(after, staying)
      let expected =
        Array(0..<ahead) + Array(staying..<queued) + Array(ahead..<staying)
      #expect(order == expected, "at ring offset \(offset)")
    }
  }

  /// Started at several ring positions, so that a move wraps around the storage's start.
  static let ringOffsets = 0..<17

  /// The order in which `queued` jobs, numbered as queued from ring position `offset`, run
  /// after `move`.
  static func order(of queued: Int, atRingOffset offset: Int, _ move: (inout JobQueue) -> Void)
    -> [Int]
  {
    let recorder = Recorder()
    var queue = JobQueue()
    for _ in 0..<offset { queue.append(.closure {}) }
    for _ in 0..<offset { _ = queue.popFirst() }
    for number in 0..<queued { queue.append(.closure { recorder.record(number) }) }
    move(&queue)
    while let job = queue.popFirst() {
      if case .closure(let body) = job { body() }
    }
    return recorder.numbers
  }
}

/// Where one case's jobs write their numbers.
private final class Recorder: Sendable {
  private let recorded = Mutex<[Int]>([])
  func record(_ number: Int) { recorded.withLock { $0.append(number) } }
  var numbers: [Int] { recorded.withLock { $0 } }
}
