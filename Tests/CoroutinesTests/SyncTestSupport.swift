import Foundation
import Synchronization

@testable import Coroutines

/// State that a coroutine lock under test guards: plain fields with no synchronisation of their
/// own, so that a lock that let two coroutines in would lose updates (and ThreadSanitizer would
/// report the race).
final class Guarded<Value>: @unchecked Sendable {  // synchronised by the lock under test
  var value: Value
  init(_ value: Value) { self.value = value }
}

/// How many coroutines are inside a section at once, and the most there ever were.
final class Occupancy: Sendable {
  private let inside = Atomic<Int>(0)
  private let peak = Atomic<Int>(0)

  func enter() {
    let now = inside.add(1, ordering: .sequentiallyConsistent).newValue
    var seen = peak.load(ordering: .relaxed)
    while now > seen {
      let (exchanged, current) = peak.compareExchange(
        expected: seen, desired: now, ordering: .relaxed)
      if exchanged { break }
      seen = current
    }
  }

  func leave() { inside.subtract(1, ordering: .sequentiallyConsistent) }

  var current: Int { inside.load(ordering: .sequentiallyConsistent) }
  var highWaterMark: Int { peak.load(ordering: .relaxed) }
}

/// The number of increments, lock races and the like the synchronisation stress tests make;
/// `COROUTINES_STRESS_MESSAGES` lowers it (as `make sanitize-thread` does) in proportion.
enum SyncStress {
  static let scale: Double =
    ProcessInfo.processInfo.environment["COROUTINES_STRESS_MESSAGES"].flatMap { Double($0) }
    .map { min($0 / 1_000_000, 1) } ?? 1

  static func count(_ full: Int) -> Int { max(Int(Double(full) * scale), 1) }
}
