import Synchronization

/// A flag that lets exactly one caller through, from any thread.
final class Once: Sendable {
  private let taken = Atomic<Bool>(false)

  /// True for the first caller only.
  func claim() -> Bool { !taken.exchange(true, ordering: .acquiringAndReleasing) }
}
