/// How a loop watches the coroutine it parked last while it has nothing else to run (see
/// `Coroutine.parkWatched`): a thread that is not a loop's wakes that coroutine by handing it
/// over through its state, and the loop, which looks at the state each turn and while it spins,
/// runs it. A wake-up from such a thread then moves one cache line between the cores, the
/// coroutine's, instead of the coroutine's and then the loop's inbox's.
extension CoroutineLoop {
  /// Starts watching `coroutine`, which has just parked watched; takes its reference.
  func watch(_ coroutine: Unmanaged<Coroutine>) {
    watched = coroutine
  }

  private var address: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

  /// True when the watched coroutine was handed over, or the watch ended: the loop has
  /// something to do about it.
  var watchedNeedsAttention: Bool {
    guard let watched else { return false }
    return watched._withUnsafeGuaranteedRef { $0.watchStatus(for: address) } != .watching
  }

  /// Runs the watched coroutine if it was handed over, or lets it go if the watch ended.
  func attendToWatched() {
    guard let coroutine = watched else { return }
    switch coroutine._withUnsafeGuaranteedRef({ $0.watchStatus(for: address) }) {
    case .watching:
      return
    case .ended:
      watched = nil
      coroutine.release()
    case .handedOver:
      watched = nil
      if ready != nil {
        coroutine._withUnsafeGuaranteedRef { $0.moved(to: Unmanaged.passUnretained(self)) }
      }
      LoopJob.resume(coroutine).run(on: address)
      coroutine.release()
    }
  }

  /// Ends the watch, before the loop sleeps; false when the coroutine was handed over or the
  /// watch ended meanwhile, and the loop should attend to it first.
  func stopWatching() -> Bool {
    guard let coroutine = watched else { return true }
    let ended = coroutine._withUnsafeGuaranteedRef {
      $0.watchStatus(for: address) == .watching && $0.endWatch()
    }
    guard ended else { return false }
    watched = nil
    coroutine.release()
    return true
  }
}
