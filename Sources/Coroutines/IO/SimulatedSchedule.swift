/// The deliveries on their way, in arrival order, behind one timer of the test loop.
///
/// A timer per segment cost an allocation or three and a heap entry in the loop each; here a
/// delivery is an entry in this heap, and the loop holds one timer, armed for the earliest:
/// while anything is on its way the loop has a pending timer, and with none pending nothing is.
/// Deliveries due at the same moment (a thousand connections in step) run in one go, in the
/// order they were sent.
struct SimulatedSchedule {
  private struct Entry {
    let arrival: UInt64
    let sequence: UInt64
    /// Retained from `add` to `popDue`: a plain value, so that moving entries in the heap
    /// costs no reference counting.
    let connection: Unmanaged<SimulatedConnection>
    let side: Int

    func isBefore(_ other: Entry) -> Bool {
      (arrival, sequence) < (other.arrival, other.sequence)
    }
  }

  private var heap: [Entry] = []
  private var nextSequence: UInt64 = 0
  /// The arrival the loop's timer is armed for (`UInt64.max`: none), apart from the timer
  /// itself: comparing with it per segment copies no existential (a retain and a release).
  private var armedDeadline = UInt64.max
  /// The loop's timer, while armed.
  private var armedTimer: (any CoroutineTimer)?

  /// Adds a delivery of `side`'s link of `connection` at `arrival`; true if the loop's timer
  /// must be armed (again) for it.
  mutating func add(_ connection: SimulatedConnection, side: Int, at arrival: UInt64) -> Bool {
    nextSequence += 1
    heap.append(
      Entry(
        arrival: arrival, sequence: nextSequence, connection: .passRetained(connection), side: side
      ))
    var child = heap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].isBefore(heap[parent]) else { break }
      heap.swapAt(child, parent)
      child = parent
    }
    return armedTimer == nil || arrival < armedDeadline
  }

  /// Records the timer armed for `deadline`, cancelling the one it replaces.
  mutating func arm(_ timer: any CoroutineTimer, for deadline: UInt64) {
    armedTimer?.cancel()
    armedTimer = timer
    armedDeadline = deadline
  }

  /// The timer fired: forgets it.
  mutating func disarm() {
    armedTimer = nil
    armedDeadline = .max
  }

  /// Cancels the armed timer (the network is going away).
  mutating func cancelTimer() {
    armedTimer?.cancel()
    disarm()
  }

  /// The earliest arrival still to come.
  var nextArrival: UInt64? { heap.first?.arrival }

  /// Releases the connections of the deliveries still to come (the network is going away).
  mutating func dropAll() {
    for entry in heap { entry.connection.release() }
    heap = []
  }

  /// Removes and returns the next delivery due by `now`, if any.
  mutating func popDue(by now: UInt64) -> (SimulatedConnection, Int)? {
    guard let first = heap.first, first.arrival <= now else { return nil }
    let last = heap.removeLast()
    if !heap.isEmpty {
      heap[0] = last
      var parent = 0
      while true {
        let left = 2 * parent + 1
        guard left < heap.count else { break }
        var child = left
        if left + 1 < heap.count, heap[left + 1].isBefore(heap[left]) { child = left + 1 }
        guard heap[child].isBefore(heap[parent]) else { break }
        heap.swapAt(child, parent)
        parent = child
      }
    }
    return (first.connection.takeRetainedValue(), first.side)
  }
}

extension SimulatedWorld {
  /// Delivers what is due on `side`'s link of `connection` at virtual time `arrival`.
  func scheduleDelivery(
    _ connection: SimulatedConnection, side: Int, at arrival: UInt64, now: UInt64
  ) {
    if schedule.add(connection, side: side, at: arrival) { armTimer(at: arrival, now: now) }
  }

  private func armTimer(at deadline: UInt64, now: UInt64) {
    // The timer reaches the world through `deliveries`, not through a reference of its own: the
    // loop holds its timers and the world its loop, so a strong one would keep a network that
    // nobody can reach alive with its loop, and a weak one gives the world a side table, which
    // sends every retain and release of the world down the runtime's slow path.
    let timer = loop.schedule(after: deadline > now ? Double(deadline - now) / 1e9 : 0) {
      [deliveries] in deliveries.withOwner { world in world.lock.withLock { world.deliverDue() } }
    }
    schedule.arm(timer, for: deadline)
  }

  /// The timer fired: delivers everything due, then arms the timer for what comes next.
  fileprivate func deliverDue() {
    schedule.disarm()
    let now = self.now
    while let (connection, side) = schedule.popDue(by: now) {
      connection.links[side].deliverDue(now: now, on: connection)
    }
    if let next = schedule.nextArrival { armTimer(at: next, now: now) }
  }
}
