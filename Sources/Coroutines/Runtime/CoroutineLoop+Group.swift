import CUContext
import Synchronization

/// What a loop does as one of a ``CoroutineLoopGroup``'s: it runs the group's ready coroutines
/// from its `ready` queue, and takes some from the group when it has nothing else.
extension CoroutineLoop {
  /// Queues a ready coroutine of the group on this loop's `ready` queue, from this loop's own
  /// thread, and wakes an idle loop of the group when there is more than the next job to share.
  func enqueueStealable(_ job: StealableJob) {
    let ready = ready!
    ready.append(job)
    guard ready.count > 1 else { return }
    // Between the append and the look at the sleeping loops, as a loop going to sleep counts
    // itself before looking at the others' queues: of the two, at least one sees the other, so
    // no loop sleeps beside a queue it could take from. Without it a loop missed the work and
    // slept while a long-running coroutine held this one.
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    groupReference!._withUnsafeGuaranteedRef { $0.wakeIdleLoop(besides: self) }
  }

  /// Queues a coroutine of the group that another thread woke or launched (any thread but this
  /// loop's): in the overflow of this loop's `ready` queue, from which this loop or an idle one
  /// takes it. Wakes this loop if it sleeps; if it is busy and more than this one waits, wakes
  /// an idle loop to take them.
  func enqueueFromElsewhere(_ job: StealableJob) {
    // Never refused: the overflow is never closed (a coroutine of the group keeps every loop of
    // the group from ending).
    let waitedBefore = ready!.pushFromElsewhere(job)
    if !wakeIfAsleep(), waitedBefore > 0 {
      groupReference!._withUnsafeGuaranteedRef { $0.wakeIdleLoop(besides: self) }
    }
  }

  /// Moves a batch of what waits in the overflow of this loop's `ready` queue into its ring
  /// (see `StealQueue.takeOverflowBatch`), and wakes an idle loop when there is more than the
  /// next job to share, as `enqueueStealable` does.
  func takeOverflowBatch() {
    let ready = ready!
    guard ready.takeOverflowBatch() > 0, ready.count > 1 else { return }
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    groupReference!._withUnsafeGuaranteedRef { $0.wakeIdleLoop(besides: self) }
  }

  /// Runs the coroutines queued on `ready` at the start of this turn (those they queue wait for
  /// the next); how many ran. Each runs on this loop from now on.
  func runReadyCoroutines(_ ready: StealQueue) -> Int {
    var remaining = ready.count
    var ran = 0
    let me = Unmanaged.passUnretained(self)
    while remaining > 0, let job = ready.popFirst() {
      job.coroutine._withUnsafeGuaranteedRef { $0.moved(to: me) }
      job.loopJob.run(on: me.toOpaque())
      remaining -= 1
      ran &+= 1
    }
    return ran
  }

  // MARK: Stacks

  /// How many stacks a group loop keeps for its next coroutines.
  static let stackStashCapacity = 64

  /// Keeps the stack of a group coroutine that finished on this loop (its thread) for the next
  /// one this loop starts; false when the stash is full. With stealing, a coroutine often
  /// finishes on another thread than the one that started its siblings, and every stack went
  /// through the process's pool and its mutex, which the loops then fought over.
  func stashStack(_ fiber: OpaquePointer, size: Int) -> Bool {
    guard ready != nil, stackStash.count < Self.stackStashCapacity else { return false }
    stackStash.append((fiber, size))
    return true
  }

  /// A stashed stack of `size` bytes, if the newest is one (this loop's thread).
  func takeStashedStack(size: Int) -> OpaquePointer? {
    guard let last = stackStash.last, last.size == size else { return nil }
    stackStash.removeLast()
    return last.fiber
  }

  /// Gives the stashed stacks back to the pool, as the loop ends.
  func returnStashedStacks() {
    for (fiber, size) in stackStash { StackPool.shared.give(fiber, size: size) }
    stackStash.removeAll()
  }

  /// Looks for ready coroutines elsewhere in the group, for a loop with nothing to run: half of
  /// another loop's ring, or of its overflow. True if it found some.
  func findGroupWork() -> Bool {
    guard let group, let ready else { return false }
    let loops = group.loops
    guard loops.count > 1 else { return false }
    // Starting after this loop, so that idle loops do not all raid the same one first.
    let start = groupIndex &+ 1
    for offset in 0..<(loops.count - 1) {
      let victim = loops[(start &+ offset) % loops.count]
      if let theirs = victim.ready, ready.steal(from: theirs) > 0 { return true }
    }
    return false
  }
}
