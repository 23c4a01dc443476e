import Synchronization

/// A reference to its owner that the owner clears as it goes away, for what may outlive it and
/// reach it then: a loop's timers report their cancellation through one, a simulated world's
/// delivery timers deliver through one, and once the owner is gone they reach nobody.
///
/// Not a weak reference: a weak reference gives its object a side table, and every retain and
/// release of the object then takes the Swift runtime's slow path, for the rest of its life (a
/// third of a simulated network's time went there).
final class OwnerHandle<Owner: AnyObject>: Sendable {
  /// The owner's address (0: none), unretained: it clears this before it goes (`detach`).
  private let owner = Mutex<UInt>(0)

  /// Reaches `owner` from now on; called once, at the end of the owner's `init`.
  func attach(_ owner: Owner) {
    let address = UInt(bitPattern: Unmanaged.passUnretained(owner).toOpaque())
    self.owner.withLock { $0 = address }
  }

  /// Reaches nobody from now on; called from the owner's `deinit`. Waits for a `withOwner`
  /// under way, so that the owner is whole for as long as one runs.
  func detach() {
    owner.withLock { $0 = 0 }
  }

  /// Runs `body` on the owner if it is still there, under this handle's lock.
  func withOwner(_ body: (Owner) -> Void) {
    owner.withLock { address in
      guard let pointer = UnsafeRawPointer(bitPattern: address) else { return }
      Unmanaged<Owner>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
    }
  }
}
