/// A waiter that a ``WaiterQueue`` links through its own storage.
@usableFromInline
protocol QueuedWaiter {
  var links: WaiterLinks<Self> { get set }
}

/// A waiter's place in its queue: the links live in the waiter, so queueing allocates nothing.
@usableFromInline
struct WaiterLinks<Waiter> {
  @usableFromInline var next: UnsafeMutablePointer<Waiter>?
  @usableFromInline var previous: UnsafeMutablePointer<Waiter>?
  @usableFromInline var isQueued = false

  @inlinable init() {}
}

/// A channel's queue of waiting senders or receivers, in arrival order: a doubly linked list
/// threaded through the waiters themselves, so appending, popping and removing a waiter that
/// gave up are O(1) and allocate nothing (see ``ReceiveWaiter`` for why pointers are safe).
@usableFromInline
struct WaiterQueue<Waiter: QueuedWaiter> {
  @usableFromInline var head: UnsafeMutablePointer<Waiter>?
  @usableFromInline var tail: UnsafeMutablePointer<Waiter>?

  @inlinable init() {}

  @inlinable var isEmpty: Bool { head == nil }

  @inlinable
  mutating func append(_ waiter: UnsafeMutablePointer<Waiter>) {
    waiter.pointee.links.previous = tail
    waiter.pointee.links.next = nil
    waiter.pointee.links.isQueued = true
    if let tail { tail.pointee.links.next = waiter } else { head = waiter }
    tail = waiter
  }

  @inlinable
  mutating func popFirst() -> UnsafeMutablePointer<Waiter>? {
    guard let first = head else { return nil }
    unlink(first)
    return first
  }

  /// Takes `waiter` out of the queue; does nothing if it is not queued (an operation popped it).
  @inlinable
  mutating func remove(_ waiter: UnsafeMutablePointer<Waiter>) {
    if waiter.pointee.links.isQueued { unlink(waiter) }
  }

  /// Empties the queue and returns its waiters, first to last.
  mutating func removeAll() -> [UnsafeMutablePointer<Waiter>] {
    var all: [UnsafeMutablePointer<Waiter>] = []
    while let waiter = popFirst() { all.append(waiter) }
    return all
  }

  @inlinable
  mutating func unlink(_ waiter: UnsafeMutablePointer<Waiter>) {
    let links = waiter.pointee.links
    if let previous = links.previous {
      previous.pointee.links.next = links.next
    } else {
      head = links.next
    }
    if let next = links.next {
      next.pointee.links.previous = links.previous
    } else {
      tail = links.previous
    }
    waiter.pointee.links = WaiterLinks()
  }
}

/// A coroutine's wait that its waker has won (see `Coroutine.claim(_:)`): the waker writes the
/// outcome, then wakes it. Unowned, as a waiter's coroutine is (see `ClaimedWait`).
@usableFromInline
struct ClaimedCoroutine {
  @usableFromInline let coroutine: Unmanaged<Coroutine>

  /// A wait of `coroutine` already won.
  @inlinable
  init(_ coroutine: Unmanaged<Coroutine>) { self.coroutine = coroutine }

  /// Wins the wait of `coroutine`'s `generation`, or nil when another party already ended it.
  @inlinable
  static func claim(_ coroutine: Unmanaged<Coroutine>, generation: UInt64) -> Self? {
    coroutine._withUnsafeGuaranteedRef { $0.claim(generation) } ? Self(coroutine) : nil
  }

  /// Wakes the coroutine (if it has not parked yet, its `park()` returns at once).
  @inlinable
  func wake() { coroutine._withUnsafeGuaranteedRef { $0.wake() } }
}
