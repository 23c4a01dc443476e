import CUContext

/// Slots, idle fibers and empty slabs. Under `mutex`.
extension StackPool {
  /// Moves a pooled fiber out of the ready list's reach into its slab, which it keeps mapped
  /// (an idle fiber still occupies its slot) and offers to `take`. Under `mutex`.
  func makeIdle(_ fiber: OpaquePointer, in sizeClass: SizeClass) {
    let slab = sizeClass.slabs[UInt(bitPattern: cu_fiber_slab(fiber))]!
    slab.idle.append(fiber)
    sizeClass.idleCount += 1
    open(slab, in: sizeClass)
  }

  /// Makes sure `slab` is offered to `take`. Under `mutex`.
  private func open(_ slab: Slab, in sizeClass: SizeClass) {
    if !slab.isOpen {
      slab.isOpen = true
      sizeClass.open.append(slab)
    }
  }

  /// One occupant of `slab` has left: forgets the slab and returns it if it is now empty, else
  /// makes sure it is offered to `take`. Under `mutex`.
  func vacate(_ slab: Slab, in sizeClass: SizeClass) -> Slab? {
    slab.occupied -= 1
    if slab.occupied == 0 {
      forgetEmpty(slab, in: sizeClass)
      return slab
    }
    open(slab, in: sizeClass)
    return nil
  }

  /// Forgets an empty slab, for the caller to unmap once the mutex is dropped. Under `mutex`.
  private func forgetEmpty(_ slab: Slab, in sizeClass: SizeClass) {
    sizeClass.slabs[slab.key] = nil
    slab.isFreed = true
  }

  /// Gives the memory of `count` idle fibers of `sizeClass` back (all of them by default);
  /// returns the slabs this left empty, for the caller to unmap once the mutex is dropped.
  ///
  /// The slabs with the fewest other occupants go first, so that whole slabs empty and are
  /// unmapped. The other fibers are advised away together, one system call per run of
  /// neighbouring slots: each call makes every thread of the process flush its TLB, so one per
  /// stack cost a group's loops more than the rest of their stack handling. Under `mutex`: a
  /// released slot must not be rebuilt before its pages are gone.
  func releaseIdle(in sizeClass: SizeClass, count: Int = .max) -> [Slab] {
    var left = min(count, sizeClass.idleCount)
    guard left > 0 else { return [] }
    let slabs = sizeClass.slabs.values.filter { !$0.idle.isEmpty }.sorted {
      $0.occupied - $0.idle.count < $1.occupied - $1.idle.count
    }
    var fibers: [OpaquePointer] = []
    var emptied: [Slab] = []
    for slab in slabs where left > 0 {
      let taken = min(left, slab.idle.count)
      left -= taken
      sizeClass.idleCount -= taken
      pooledTotal -= taken
      mappedTotal -= taken
      slab.occupied -= taken
      if slab.occupied == 0 {
        slab.idle.removeAll()
        forgetEmpty(slab, in: sizeClass)
        emptied.append(slab)
        continue
      }
      for _ in 0..<taken {
        let fiber = slab.idle.removeLast()
        fibers.append(fiber)
        slab.released.append(Int(cu_fiber_slot(fiber)))
      }
    }
    if !fibers.isEmpty {
      fibers.withUnsafeBufferPointer { cu_stack_release_fibers($0.baseAddress!, $0.count) }
    }
    return emptied
  }
}

/// One slab's slots as the pool sees them. Touched only under the pool's mutex (unchecked
/// fields, as for `SizeClass`).
final class Slab: @unchecked Sendable {  // touched only under the pool's mutex
  let pointer: OpaquePointer
  let count: Int
  /// Slots in use, in the ready list or idle; the slab is unmapped when this reaches 0.
  @exclusivity(unchecked) var occupied = 0
  /// Slots from here on have never been used.
  @exclusivity(unchecked) var nextFresh = 0
  /// Free slots whose memory was given back: their fiber must be built again.
  @exclusivity(unchecked) var released: [Int] = []
  /// Free fibers still holding their memory, not in the ready list.
  @exclusivity(unchecked) var idle: [OpaquePointer] = []
  @exclusivity(unchecked) var isOpen = false
  @exclusivity(unchecked) var isFreed = false

  init(_ pointer: OpaquePointer) {
    self.pointer = pointer
    self.count = cu_stack_slab_count(pointer)
  }

  var key: UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(pointer))) }
}
