import Glibc

/// The children a task is waiting for, each in the place it was given when adopted.
///
/// Places count up for the parent's whole life and a child keeps its place until it leaves, so
/// a child that leaves touches only itself and its slot: the list drops empty slots at its
/// ends by moving its bounds. Children that finish in the order they were launched (the usual
/// case: a million launched at once run in that order) or in the opposite order leave no hole.
/// Moving the last child into the leaving one's place, as the list did before, wrote to a task
/// launched long before or after, cold by then, for every child that left.
///
/// Holes left by children that finish out of order are squeezed out when the storage fills,
/// renumbering the children still in it, and only when they are at least half of it: each
/// adoption pays for one renumbering at most.
///
/// Raw storage, header and slots in one allocation: a class reference read from the task and
/// held across the calls through `TaskNode` was retained and released around them. Touched
/// only under the parent's `futureLock`. The task frees the storage in its deinitialiser (as a
/// noncopyable type with a deinitialiser of its own, the list crashed the optimiser).
@usableFromInline
struct ChildList {
  @usableFromInline var storage: UnsafeMutablePointer<ChildHeader>?

  @inlinable init() { storage = nil }

  /// Frees the storage; the list must not be used again.
  func deallocate() { free(storage) }

  /// True when no child is in the list.
  @inlinable var isEmpty: Bool { storage.map { $0.pointee.live == 0 } ?? true }

  /// How many children are in the list.
  var count: Int { storage?.pointee.live ?? 0 }

  /// Slots between the list's bounds, in use or emptied (for tests).
  var span: Int { storage.map { $0.pointee.end - $0.pointee.head } ?? 0 }

  /// Slots the storage holds (for tests).
  var capacity: Int { storage?.pointee.capacity ?? 0 }

  /// Adds `child` at the next place and records that place in it.
  mutating func append(_ child: any TaskNode) {
    if storage == nil { storage = Self.allocate(capacity: 16) }
    if storage!.pointee.end == storage!.pointee.capacity { makeRoom() }
    let header = storage!
    child.indexInParent = header.pointee.base + header.pointee.end
    (Self.slots(header) + header.pointee.end).initialize(to: ChildLink(node: child))
    header.pointee.end += 1
    header.pointee.live += 1
  }

  /// Takes `child` out, if it is in the list (a child born cancelled was never adopted).
  func remove(_ child: any TaskNode) {
    let place = child.indexInParent
    guard place >= 0 else { return }
    child.indexInParent = -1
    guard let header = storage else { coStop("a child left a list it was not in") }
    let slots = Self.slots(header)
    coPrecondition(
      place >= header.pointee.base + header.pointee.head
        && place < header.pointee.base + header.pointee.end,
      "a child left a list it was not in")
    slots[place - header.pointee.base] = ChildLink(node: nil)
    header.pointee.live -= 1
    if header.pointee.live == 0 {
      // Places restart from zero: no child holds one any more.
      header.pointee = ChildHeader(capacity: header.pointee.capacity)
      return
    }
    while slots[header.pointee.head].isEmpty { header.pointee.head += 1 }
    while slots[header.pointee.end - 1].isEmpty { header.pointee.end -= 1 }
  }

  /// Strong references to every child in the list.
  var nodes: [any TaskNode] {
    guard let header = storage else { return [] }
    let slots = Self.slots(header)
    return (header.pointee.head..<header.pointee.end).compactMap { slots[$0].node }
  }

  /// Frees the end of a full storage: drops the empty slots before the first child if they
  /// are at least half of it (moving slots, not renumbering children), else squeezes the holes
  /// out if they are at least half of it, else moves to storage twice as large.
  private mutating func makeRoom() {
    let header = storage!
    let slots = Self.slots(header)
    let capacity = header.pointee.capacity
    let head = header.pointee.head
    if head * 2 >= capacity || header.pointee.live * 2 > capacity {
      // Either way places stay, so no child is touched. Twice as large with `realloc`: glibc
      // resizes a large list's mapping without copying it (see `Ring.grow()`), where a new
      // list and a move faulted in every page again.
      let target = head * 2 >= capacity ? header : Self.reallocate(header, capacity: capacity * 2)
      let count = target.pointee.end - head
      if head > 0 {
        Self.slots(target).moveInitialize(from: Self.slots(target) + head, count: count)
      }
      target.pointee.base += head
      target.pointee.head = 0
      target.pointee.end = count
      storage = target
      return
    }
    let base = header.pointee.base + head
    var kept = 0
    for index in head..<header.pointee.end {
      guard let node = slots[index].node else { continue }
      node.indexInParent = base + kept
      slots[kept] = slots[index]
      kept += 1
    }
    header.pointee.base = base
    header.pointee.head = 0
    header.pointee.end = kept
  }

  /// Header and slots in one block from `malloc`, so that `reallocate` can resize it.
  private static func allocate(capacity: Int) -> UnsafeMutablePointer<ChildHeader> {
    let header = reallocate(nil, capacity: capacity)
    header.initialize(to: ChildHeader(capacity: capacity))
    return header
  }

  /// Resizes the block of `header` (a new one for nil) to `capacity` slots, keeping the header
  /// and the slots in it: a bitwise move, which suits them (plain counts and unowned(unsafe)
  /// references). The header keeps its old capacity until it is set here.
  private static func reallocate(_ header: UnsafeMutablePointer<ChildHeader>?, capacity: Int)
    -> UnsafeMutablePointer<ChildHeader>
  {
    let bytes = MemoryLayout<ChildHeader>.stride + capacity * MemoryLayout<ChildLink>.stride
    guard let raw = realloc(header, bytes) else {
      coStop("a task's list of children: out of memory for \(capacity) children")
    }
    let resized = raw.bindMemory(to: ChildHeader.self, capacity: 1)
    if header != nil { resized.pointee = ChildHeader(resizing: resized.pointee, to: capacity) }
    (raw + MemoryLayout<ChildHeader>.stride).bindMemory(to: ChildLink.self, capacity: capacity)
    return resized
  }

  private static func slots(_ header: UnsafeMutablePointer<ChildHeader>)
    -> UnsafeMutablePointer<ChildLink>
  {
    UnsafeMutableRawPointer(header + 1).assumingMemoryBound(to: ChildLink.self)
  }
}

/// The bounds and counts of a `ChildList`, before its slots.
@usableFromInline
struct ChildHeader {
  /// The place of the first slot.
  var base = 0
  /// Slots before this one are empty.
  var head = 0
  /// Slots from this one on are unused.
  var end = 0
  /// Children in the list.
  @usableFromInline var live = 0
  /// Slots after the header.
  let capacity: Int

  init(capacity: Int) { self.capacity = capacity }

  /// `other` with room for `capacity` slots.
  init(resizing other: ChildHeader, to capacity: Int) {
    self = ChildHeader(capacity: capacity)
    base = other.base
    head = other.head
    end = other.end
    live = other.live
  }
}
