import CUContext
import Dispatch

/// Giving pooled stacks back to the system: the idle ones that stay unused (see
/// `IdleStackDecay`), and all beyond a limit when asked.
extension StackPool {
  /// Makes sure the pool looks at its idle stacks when the first of their intervals ends (see
  /// `IdleStackDecay`), on a Dispatch thread: the memory goes back even if no coroutine ever
  /// starts or finishes again. Under `mutex`.
  func scheduleDecayCheck() {
    guard !decayCheckScheduled,
      let deadline = classes.values.compactMap({ $0.decay.deadline }).min()
    else { return }
    decayCheckScheduled = true
    let delay = deadline &- min(deadline, monotonicNanoseconds())
    DispatchQueue.global(qos: .utility).asyncAfter(
      deadline: .now() + .nanoseconds(Int(clamping: delay))
    ) { self.releaseUnusedIdleStacks() }
  }

  /// Gives back the memory of the idle stacks that stayed unused through a whole interval, and
  /// looks again at the next interval's end while some stay idle.
  private func releaseUnusedIdleStacks() {
    let empty = mutex.withLock { _ -> [Slab] in
      decayCheckScheduled = false
      let now = monotonicNanoseconds()
      let empty = classes.values.flatMap { releaseUnused(in: $0, at: now) }
      scheduleDecayCheck()
      return empty
    }
    empty.forEach { cu_stack_slab_free($0.pointer) }
  }

  /// The idle stacks of `sizeClass` found unused at `now`, released. Under `mutex`.
  private func releaseUnused(in sizeClass: SizeClass, at now: UInt64) -> [Slab] {
    guard
      let unused = sizeClass.decay.release(
        now: now, idle: sizeClass.idleCount, capacity: CoroutineStack.poolCapacity),
      unused > 0
    else { return [] }
    return releaseIdle(in: sizeClass, count: unused)
  }

  /// The look at the idle stacks of one size, as if made at `now` (for tests, which cannot wait
  /// for the real one).
  func releaseUnusedIdleStacks(size: Int, at now: UInt64) {
    let empty = mutex.withLock { _ -> [Slab] in
      classes[size].map { releaseUnused(in: $0, at: now) } ?? []
    }
    empty.forEach { cu_stack_slab_free($0.pointer) }
  }

  /// When the current interval of the idle stacks of `size` ends, if one runs (for tests).
  func idleIntervalDeadline(size: Int) -> UInt64? {
    mutex.withLock { _ in classes[size]?.decay.deadline }
  }

  /// Keeps at most `limit` finished fibers of each size; the memory of the others goes back to
  /// the system (their slabs are unmapped once empty). Threads' caches are emptied and unbound
  /// (they bind again, within `poolCapacity`, when their threads next give a fiber back).
  func trim(toPerSize limit: Int) {
    let empty = mutex.withLock { _ -> [Slab] in
      var empty: [Slab] = []
      for (size, sizeClass) in classes { trim(sizeClass, size: size, to: limit, freeing: &empty) }
      return empty
    }
    empty.forEach { cu_stack_slab_free($0.pointer) }
  }

  /// Trims the pooled stacks of one size only (for tests, which run in parallel: trimming every
  /// size would move the counts another test is reading for its own size).
  func trim(size: Int, to limit: Int) {
    let empty = mutex.withLock { _ -> [Slab] in
      var empty: [Slab] = []
      if let sizeClass = classes[size] { trim(sizeClass, size: size, to: limit, freeing: &empty) }
      return empty
    }
    empty.forEach { cu_stack_slab_free($0.pointer) }
  }

  /// Under `mutex`: keeps at most `limit` pooled stacks of `sizeClass`, collecting the slabs
  /// left empty, to be unmapped once the mutex is dropped.
  private func trim(
    _ sizeClass: SizeClass, size: Int, to limit: Int, freeing empty: inout [Slab]
  ) {
    unbindCaches(of: sizeClass, size: size)
    while sizeClass.ready.count > limit, let fiber = sizeClass.ready.popLast() {
      makeIdle(fiber, in: sizeClass)
    }
    if sizeClass.idleCount + sizeClass.ready.count > limit {
      empty += releaseIdle(in: sizeClass)
      sizeClass.decay.reset()
    }
  }
}
