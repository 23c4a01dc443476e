/// A first-in, first-out queue: amortised O(1) at both ends without a ring buffer's index
/// arithmetic. Popped slots are reclaimed in bulk once they make up half of the storage.
/// Channels queue their waiters in it, the loop's timer queue its in-order run, and the test
/// loop its ready jobs (which it also takes out of order, for a seeded pick).
@usableFromInline
struct FIFO<Element> {
  @usableFromInline var storage: [Element?] = []
  @usableFromInline var head = 0

  @inlinable init() {}

  @inlinable
  var isEmpty: Bool { head == storage.count }
  @inlinable
  var count: Int { storage.count - head }
  @inlinable
  var first: Element? { isEmpty ? nil : storage[head] }
  @inlinable
  var last: Element? { isEmpty ? nil : storage[storage.count - 1] }

  /// Calls `body` with the element `offset` places from the front, in place (no copy, so no
  /// retain of an object it holds), or returns nil when there is none.
  @inlinable
  func withElement<R>(at offset: Int = 0, _ body: (borrowing Element) -> R) -> R? {
    guard offset >= 0, offset < count else { return nil }
    return storage.withUnsafeBufferPointer { slots in body(slots[head + offset].unsafelyUnwrapped) }
  }

  @inlinable
  mutating func append(_ element: consuming Element) {
    storage.append(element)
  }

  @inlinable
  mutating func popFirst() -> Element? {
    guard head < storage.count else { return nil }
    if head == 0, storage.count == 1 {
      // The usual case of a channel's waiter queue: one in, one out, no slot to reclaim.
      return storage.removeLast()
    }
    // Moved out, not copied: the slot lets go of its element at once (no retain and release).
    let element = storage[head].take()
    head += 1
    reclaimTakenSlots()
    return element
  }

  /// Removes and returns the element `offset` places from the front; the front element takes
  /// its place (a swap), so this is O(1) but does not keep the others' order.
  @inlinable
  mutating func swapRemove(at offset: Int) -> Element {
    precondition(
      offset >= 0 && offset < count, "FIFO.swapRemove(at:): offset \(offset) is out of range")
    storage.swapAt(head, head + offset)
    return popFirst()!
  }

  @inlinable
  mutating func reclaimTakenSlots() {
    if head == storage.count {
      storage.removeAll(keepingCapacity: true)
      head = 0
    } else if head >= 32, head * 2 >= storage.count {
      storage.removeFirst(head)
      head = 0
    }
  }

  /// How many elements `matches`.
  func count(where matches: (Element) -> Bool) -> Int {
    storage[head...].count { $0.map(matches) ?? false }
  }

  /// Removes the first element for which `matches` is true; returns whether one was found.
  /// Linear, which suits its one use: a waiter leaving early (cancellation, a lost select).
  @discardableResult
  mutating func removeFirst(where matches: (Element) -> Bool) -> Bool {
    guard let index = storage[head...].firstIndex(where: { $0.map(matches) ?? false }) else {
      return false
    }
    storage.remove(at: index)
    if head == storage.count {
      storage.removeAll(keepingCapacity: true)
      head = 0
    }
    return true
  }

  /// Removes and returns every element, first to last.
  mutating func removeAll() -> [Element] {
    let elements = storage[head...].compactMap { $0 }
    storage.removeAll()
    head = 0
    return elements
  }
}
