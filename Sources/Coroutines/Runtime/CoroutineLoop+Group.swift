import CUContext

/// What a loop does as one of a ``CoroutineLoopGroup``'s: it runs the group's ready coroutines
/// from its `ready` queue, and takes some from the group when it has nothing else.
extension CoroutineLoop {
  /// Queues a ready coroutine of the group on this loop's `ready` queue, from this loop's own
  /// thread; spills half the queue to the group when it is full, and wakes an idle loop of the
  /// group when there is more than the next job to share.
  func enqueueStealable(_ job: StealableJob) {
    let ready = ready!
    while !ready.append(job) { group!.spill(ready.takeOlderHalf()) }
    if ready.count > 1 { group!.wakeIdleLoop(besides: self) }
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

  /// Looks for ready coroutines elsewhere in the group, for a loop with nothing to run: the
  /// group's overflow first, then half of another loop's queue. True if it found some.
  func findGroupWork() -> Bool {
    guard let group, let ready else { return false }
    if group.takeOverflow(into: self) > 0 { return true }
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
