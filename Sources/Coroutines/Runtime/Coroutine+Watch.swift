import CUContext

/// A coroutine watched by its idle loop (see `CoroutineLoop.watch`).
extension Coroutine {
  // MARK: Watched by its loop

  /// Parks the coroutine watched by `loop` (the address of the loop whose thread resumed it)
  /// when that loop has nothing else to run: a thread that is not a loop's then wakes it by
  /// its state alone, which the spinning loop sees, and the wake-up crosses between the cores
  /// without a queue. False, with nothing done, if the loop has other work or a wake-up came
  /// while the coroutine left its stack.
  func parkWatched(by loop: UnsafeMutableRawPointer) -> Bool {
    let watching = Unmanaged<CoroutineLoop>.fromOpaque(loop)
    guard watching._withUnsafeGuaranteedRef({ $0.mayWatch }) else { return false }
    // Named before the swap, which publishes it: once watched, a waker may hand it over.
    watcher.store(UInt(bitPattern: loop), ordering: .relaxed)
    // The loop's reference: a loop's thread may take the coroutine away from the watch, and
    // it may finish elsewhere before the loop looks again.
    let held = Unmanaged.passUnretained(self).retain()
    guard compareAndSwap(.running, .watched) else {
      held.release()
      return false
    }
    watching._withUnsafeGuaranteedRef { $0.watch(held) }
    return true
  }

  /// Where a watch by `loop` stands.
  enum WatchStatus { case watching, handedOver, ended }

  /// Where `loop`'s watch of this coroutine stands: still watching, handed over to it (it runs
  /// the coroutine now), or ended (a loop's thread took the coroutine, and it may be watched
  /// by another loop since). The watching loop's thread only.
  func watchStatus(for loop: UnsafeMutableRawPointer) -> WatchStatus {
    let now = state.load(ordering: .acquiring)
    guard now == .watched || now == .handedOver,
      watcher.load(ordering: .relaxed) == UInt(bitPattern: loop)
    else { return .ended }
    return now == .watched ? .watching : .handedOver
  }

  /// Ends a watch that `watchStatus` found still watching: true if the coroutine is merely
  /// suspended now, false if a waker came first.
  func endWatch() -> Bool { compareAndSwap(.watched, .suspended) }
}
