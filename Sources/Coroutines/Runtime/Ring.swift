import Glibc

/// A first-in, first-out ring of raw slots, O(1) at both ends, that grows by doubling and never
/// shrinks, so a queue in steady state allocates nothing per element: the one ring of the
/// runtime, under a loop's jobs (`JobQueue`), both parts of its timer heap (`TimerEntryRing`),
/// a group loop's overflow of ready coroutines, the test loop's ready jobs, a channel's buffer and
/// a scheduled generator's waiting consumers.
///
/// A ring rather than an array with a moving head: reclaiming the taken slots at the front of
/// an array moved the rest down and destroyed every taken slot through the element type's
/// value witness, which with ten thousand queued elements came to about a fifth of the
/// instructions of each wake-up.
///
/// Raw storage rather than an array: elements are moved in and out of their slots (a copy
/// costs a retain now and a release later), and no uniqueness check or optional wrapper is paid
/// per element. Noncopyable, because it owns that storage. Generic, with the one-user extras in
/// extensions beside their users (`prefetchUpcoming` for jobs, `moveDead` for timers): a
/// release build specialises it for each element type within the module, and the smallest
/// helpers are `@_transparent`, the one kind of function a debug build inlines (and, inlined
/// into a caller of a concrete ring, no longer generic).
@usableFromInline
struct Ring<Element>: ~Copyable {
  /// The slots; a placeholder, never read, while `capacity` is zero.
  @usableFromInline var storage: UnsafeMutablePointer<Element>
  /// Zero until the first element comes (an empty ring allocates nothing: a channel that never
  /// buffers, a timer heap without timers), then a power of two, so that wrapping is a mask.
  @usableFromInline var capacity = 0
  @usableFromInline var head = 0
  /// How many elements the ring holds (set only by the ring itself).
  @usableFromInline var count = 0

  @inlinable
  init() {
    storage = UnsafeMutablePointer(bitPattern: MemoryLayout<Element>.alignment)!
  }

  // Inlinable, like everything a channel's inlinable code reaches: a release build otherwise
  // stops in the optimiser, inlining this into a channel's synthesised accessors.
  @inlinable
  deinit {
    var offset = 0
    while offset < count {
      (storage + slot(offset)).deinitialize(count: 1)
      offset &+= 1
    }
    if capacity > 0 { free(storage) }
  }

  @usableFromInline
  var isEmpty: Bool {
    @_transparent get { count == 0 }
  }

  @_transparent @usableFromInline
  func slot(_ offset: Int) -> Int { (head &+ offset) & (capacity &- 1) }

  /// The element `offset` places from the front, in place (no copy, so no retain of an object
  /// it holds); valid until the ring next changes. `offset` must be below `count`.
  @_transparent @usableFromInline
  func pointer(at offset: Int) -> UnsafeMutablePointer<Element> { storage + slot(offset) }

  /// The first element, copied; nil when the ring is empty.
  var first: Element? { isEmpty ? nil : pointer(at: 0).pointee }

  /// The last element, copied; nil when the ring is empty.
  var last: Element? { isEmpty ? nil : pointer(at: count &- 1).pointee }

  /// Calls `body` with the element `offset` places from the front, in place (no copy, so no
  /// retain of an object it holds), or returns nil when there is none.
  func withElement<R>(at offset: Int = 0, _ body: (borrowing Element) -> R) -> R? {
    guard offset >= 0, offset < count else { return nil }
    return body(pointer(at: offset).pointee)
  }

  @inlinable
  mutating func append(_ element: consuming Element) {
    if count == capacity { grow() }
    (storage + slot(count)).initialize(to: element)
    count &+= 1
  }

  @inlinable
  mutating func popFirst() -> Element? {
    guard count > 0 else { return nil }
    let element = (storage + head).move()
    head = (head &+ 1) & (capacity &- 1)
    count &-= 1
    return element
  }

  mutating func popLast() -> Element? {
    guard count > 0 else { return nil }
    count &-= 1
    return (storage + slot(count)).move()
  }

  /// Moves the last `moving` elements, in their order, before all the others.
  mutating func moveLastToFront(_ moving: Int) {
    for _ in 0..<min(moving, count) {
      let element = (storage + slot(count &- 1)).move()
      head = (head &- 1) & (capacity &- 1)
      (storage + head).initialize(to: element)
    }
  }

  /// Moves the last `moving` elements, in their order, to just after the first `after` ones.
  /// O(`moving` + `after`): to the front, then the two blocks at the front swapped in place.
  mutating func moveLast(_ moving: Int, after: Int) {
    let moving = min(moving, count)
    moveLastToFront(moving)
    let after = min(after, count &- moving)
    guard after > 0, moving > 0 else { return }
    reverse(0, moving)
    reverse(moving, moving &+ after)
    reverse(0, moving &+ after)
  }

  /// Reverses the elements from offset `start` up to `end` (excluded), in place.
  private mutating func reverse(_ start: Int, _ end: Int) {
    var low = start
    var high = end &- 1
    while low < high {
      swapAt(low, high)
      low &+= 1
      high &-= 1
    }
  }

  /// Swaps two elements by moving them (a copy would retain their objects).
  mutating func swapAt(_ i: Int, _ j: Int) {
    guard i != j else { return }
    let a = pointer(at: i)
    let b = pointer(at: j)
    let held = a.move()
    a.initialize(to: b.move())
    b.initialize(to: held)
  }

  /// Removes and returns the element `offset` places from the front; the front element takes
  /// its place (a swap), so this is O(1) but does not keep the others' order.
  mutating func swapRemove(at offset: Int) -> Element {
    coPrecondition(
      offset >= 0 && offset < count, "Ring.swapRemove(at:): offset \(offset) is out of range")
    swapAt(0, offset)
    return popFirst()!
  }

  /// How many elements `matches`, each looked at in place.
  func count(where matches: (borrowing Element) -> Bool) -> Int {
    var found = 0
    var offset = 0
    while offset < count {
      if matches(pointer(at: offset).pointee) { found &+= 1 }
      offset &+= 1
    }
    return found
  }

  /// Moves every element that `matches` to the end of `other`, keeping the others here in
  /// their order; each is looked at in place and moved, never copied.
  mutating func moveAll(where matches: (borrowing Element) -> Bool, into other: inout Ring<Element>)
  {
    var kept = 0
    var offset = 0
    while offset < count {
      let source = pointer(at: offset)
      if matches(source.pointee) {
        other.append(source.move())
      } else {
        if kept != offset { pointer(at: kept).initialize(to: source.move()) }
        kept &+= 1
      }
      offset &+= 1
    }
    count = kept
  }

  /// Removes the first element for which `matches` is true, the ones behind it moving up a
  /// place in their order; returns whether one was found. Linear, which suits its one use: a
  /// waiter leaving early.
  @discardableResult
  mutating func removeFirst(where matches: (borrowing Element) -> Bool) -> Bool {
    var found = 0
    while found < count, !matches(pointer(at: found).pointee) { found &+= 1 }
    guard found < count else { return false }
    pointer(at: found).deinitialize(count: 1)
    var offset = found
    while offset < count &- 1 {
      pointer(at: offset).initialize(to: pointer(at: offset &+ 1).move())
      offset &+= 1
    }
    count &-= 1
    return true
  }

  /// Removes and returns every element, first to last.
  mutating func removeAll() -> [Element] {
    var elements: [Element] = []
    elements.reserveCapacity(count)
    while let element = popFirst() { elements.append(element) }
    return elements
  }

  /// Doubles the storage (16 slots at first), the elements kept in order from `head`.
  ///
  /// With `realloc`, as Rust's `Vec` grows: glibc keeps a large block in a mapping of its own
  /// and resizes it with `mremap`, so the kernel moves its pages rather than their being
  /// copied, and a small block may grow in place. Allocating a new ring and moving the
  /// elements over wrote every page of the new one, faulting it in beside the old one, and a
  /// burst of a million launches paid that at each doubling of the loop's queue. Only the
  /// elements that wrapped round (before `head`) move, to just after the old end.
  @usableFromInline
  mutating func grow() {
    let larger = Swift.max(16, capacity &* 2)
    let bytes = larger &* MemoryLayout<Element>.stride
    guard _isBitwiseTakable(Element.self), MemoryLayout<Element>.alignment <= 16 else {
      return growByMoving(to: larger)
    }
    // A bitwise move is a move for such elements, as in `moveInitialize`.
    guard let raw = realloc(capacity > 0 ? UnsafeMutableRawPointer(storage) : nil, bytes) else {
      coStop("Ring: out of memory growing to \(larger) elements")
    }
    let bigger = raw.bindMemory(to: Element.self, capacity: larger)
    let wrapped = head &+ count &- capacity
    if wrapped > 0 { (bigger + capacity).moveInitialize(from: bigger, count: wrapped) }
    storage = bigger
    capacity = larger
  }

  /// `grow()` for elements that a bitwise copy does not move.
  private mutating func growByMoving(to larger: Int) {
    guard let raw = malloc(larger &* MemoryLayout<Element>.stride) else {
      coStop("Ring: out of memory growing to \(larger) elements")
    }
    let bigger = raw.bindMemory(to: Element.self, capacity: larger)
    var offset = 0
    while offset < count {
      (bigger + offset).initialize(to: (storage + slot(offset)).move())
      offset &+= 1
    }
    if capacity > 0 { free(storage) }
    storage = bigger
    capacity = larger
    head = 0
  }
}
