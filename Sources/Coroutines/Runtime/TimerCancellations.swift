import Synchronization

/// Where a loop's timers report their cancellation: a reference to the loop that the loop
/// clears as it goes away, so that a timer cancelled after its loop is gone reports to nobody.
///
/// Not a weak reference to the loop: a weak reference gives its object a side table, and every
/// retain and release of the loop then takes the Swift runtime's slow path, for the rest of the
/// loop's life (a third of a simulated network's time went there).
final class TimerCancellations<Loop: AnyObject>: Sendable {
  /// The loop's address (0: none), unretained: it clears this before it goes (`detach`).
  private let loop = Mutex<UInt>(0)

  /// Reports to `loop` from now on; called once, at the end of the loop's `init`.
  func attach(_ loop: Loop) {
    let address = UInt(bitPattern: Unmanaged.passUnretained(loop).toOpaque())
    self.loop.withLock { $0 = address }
  }

  /// Reports to nobody from now on; called from the loop's `deinit`. Waits for a report under
  /// way, so that the loop is whole for as long as one runs.
  func detach() {
    loop.withLock { $0 = 0 }
  }

  /// Runs `report` on the loop if it is still there.
  func report(_ report: (Loop) -> Void) {
    loop.withLock { address in
      guard let pointer = UnsafeRawPointer(bitPattern: address) else { return }
      Unmanaged<Loop>.fromOpaque(pointer)._withUnsafeGuaranteedRef(report)
    }
  }
}
