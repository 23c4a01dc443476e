import Testing

@testable import Coroutines

/// `SyncWakeList`: the granted waits a lock wakes after dropping its queue's lock.
@Suite struct SyncWaiterTests {
  /// A writer releasing n queued readers appends n grants: each append must reuse the list's
  /// storage (amortised growth), not copy everything granted so far, or the release is
  /// quadratic in the readers, under the queue's lock.
  @Test func appendingGrantsGrowsTheListAFewTimesNotOncePerGrant() throws {
    let grants = 20_000
    let reallocations = try CoroutineLoop.run { () -> Int in
      // Never woken: the list is dropped unwoken, so any coroutine serves as the claimed one.
      let running = Unmanaged.passUnretained(Coroutine.current!)
      var list = SyncWakeList()
      var address = list.storageAddressForTesting
      var moved = 0
      for _ in 0..<grants {
        list.append(ClaimedCoroutine(running))
        let now = list.storageAddressForTesting
        if now != address { moved += 1 }
        address = now
      }
      return moved
    }
    // Doubling growth moves the storage about log2(20 000) ≈ 15 times.
    #expect(reallocations <= 40)
  }
}
