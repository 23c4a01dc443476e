/// A first-in, first-out queue: a ring of slots, O(1) at both ends.
///
/// Channels queue their values and waiters in it, and the test loop its ready jobs (which it
/// also takes out of order, for a seeded pick). The loop's own queues are concrete instead
/// (`JobQueue`, `TimerHeap`): a debug build does not specialise a generic one.
///
/// A ring rather than an array with a moving head: reclaiming the taken slots at the front of
/// an array moved the rest down and destroyed every taken slot through the element type's
/// value witness, which with ten thousand queued elements came to about a fifth of the
/// instructions of each wake-up.
@usableFromInline
struct FIFO<Element> {
  /// The ring: `count` elements from `head` on, wrapping past the end; every other slot is nil.
  /// Its length is zero or a power of two, so that wrapping is a mask.
  @usableFromInline var slots: [Element?] = []
  @usableFromInline var head = 0
  @usableFromInline private(set) var count = 0

  @inlinable init() {}

  @inlinable
  var isEmpty: Bool { count == 0 }
  @inlinable
  var first: Element? { isEmpty ? nil : slots[head] }
  @inlinable
  var last: Element? { isEmpty ? nil : slots[slot(count &- 1)] }

  /// The slot of the element `offset` places from the front.
  @inlinable
  func slot(_ offset: Int) -> Int { (head &+ offset) & (slots.count &- 1) }

  /// Calls `body` with the element `offset` places from the front, in place (no copy, so no
  /// retain of an object it holds), or returns nil when there is none.
  @inlinable
  func withElement<R>(at offset: Int = 0, _ body: (borrowing Element) -> R) -> R? {
    guard offset >= 0, offset < count else { return nil }
    return slots.withUnsafeBufferPointer { slots in body(slots[slot(offset)].unsafelyUnwrapped) }
  }

  @inlinable
  mutating func append(_ element: consuming Element) {
    if count == slots.count { grow() }
    slots[slot(count)] = consume element
    count &+= 1
  }

  @inlinable
  mutating func popFirst() -> Element? {
    guard count > 0 else { return nil }
    // Moved out, not copied: the slot lets go of its element at once (no retain and release).
    let element = slots[head].take()
    head = slot(1)
    count &-= 1
    return element
  }

  /// Doubles the ring (four slots at first), its elements moved to the front in order.
  @usableFromInline
  mutating func grow() {
    let length = Swift.max(4, 2 * slots.count)
    var larger: [Element?] = []
    larger.reserveCapacity(length)
    for offset in 0..<count { larger.append(slots[slot(offset)].take()) }
    larger.append(contentsOf: repeatElement(nil, count: length - count))
    slots = larger
    head = 0
  }

  /// Removes and returns the element `offset` places from the front; the front element takes
  /// its place (a swap), so this is O(1) but does not keep the others' order.
  @inlinable
  mutating func swapRemove(at offset: Int) -> Element {
    coPrecondition(
      offset >= 0 && offset < count, "FIFO.swapRemove(at:): offset \(offset) is out of range")
    slots.swapAt(head, slot(offset))
    return popFirst()!
  }

  /// How many elements `matches`.
  func count(where matches: (Element) -> Bool) -> Int {
    (0..<count).count { matches(slots[slot($0)].unsafelyUnwrapped) }
  }

  /// Removes the first element for which `matches` is true; returns whether one was found.
  /// Linear, which suits its one use: a waiter leaving early (cancellation, a lost select).
  @discardableResult
  mutating func removeFirst(where matches: (Element) -> Bool) -> Bool {
    guard let found = (0..<count).first(where: { matches(slots[slot($0)].unsafelyUnwrapped) })
    else { return false }
    // The ones behind it move up a place, keeping their order.
    slots[slot(found)] = nil
    for offset in found..<(count &- 1) {
      slots.swapAt(slot(offset), slot(offset &+ 1))
    }
    count &-= 1
    return true
  }

  /// Removes and returns every element, first to last.
  mutating func removeAll() -> [Element] {
    let elements = (0..<count).map { slots[slot($0)].unsafelyUnwrapped }
    self = FIFO()
    return elements
  }
}
