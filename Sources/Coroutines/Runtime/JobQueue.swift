import CLinux
import CUContext

/// A unit of work on a loop: a closure, or a coroutine to resume or to start (no closure
/// allocated, and no retain: a started coroutine keeps itself alive until it finishes, and one
/// launched with a task is kept alive by the task it is attached to until then).
enum LoopJob {
  case closure(@Sendable () -> Void)
  case resume(Unmanaged<Coroutine>)
  case start(Unmanaged<Coroutine>)

  /// Runs the job. Always inlined into the loop's own frame, which calls `cu_fiber_resume`
  /// itself: a frame of its own spanning the switch would return through a mispredicted `ret`
  /// each time the coroutine switched back (see "Switching" in Coroutine+Switch.swift).
  @inline(__always)
  func run(on loop: UnsafeMutableRawPointer) {
    switch self {
    case .closure(let job): job()
    case .resume(let coroutine):
      let fiber = coroutine._withUnsafeGuaranteedRef { $0.fiberForResume() }
      cu_fiber_resume(fiber, coroutine.toOpaque())
      _ = coroutine._withUnsafeGuaranteedRef { $0.switchedBack(resumedBy: loop) }
    case .start(let coroutine): coroutine._withUnsafeGuaranteedRef { $0.startAttached() }
    }
  }
}

/// The loop's jobs, first in, first out: the hottest structure of the runtime, every switch of
/// a coroutine passes through it.
typealias JobQueue = Ring<LoopJob>

extension Ring where Element == LoopJob {
  /// Warms the caches for the coroutines about to be resumed, in stages so that each step reads
  /// only what an earlier one fetched: the records of the coroutines eight to eleven jobs ahead,
  /// the saved contexts of those four to seven ahead (their addresses are in the records), the
  /// frames of the one two ahead (their address is in its context). With thousands of
  /// coroutines waking in turn, every one is otherwise a chain of cache misses on its record,
  /// its context and its stack.
  ///
  /// Records and contexts are asked for four at a time, every fourth job (`batchStart`): each
  /// context lies on its own stack's page, so its first touch waits for a page-table walk, and
  /// the processor walks for several prefetches at once only when they come together.
  func prefetchUpcoming(batchStart: Bool) {
    guard count > 2 else { return }  // each stage looks two jobs ahead or more
    if batchStart {
      for offset in 8..<12 {
        guard let coroutine = coroutine(at: offset) else { break }
        cu_prefetch_bytes(coroutine.toOpaque(), Coroutine.prefetchBytes)
      }
      for offset in 4..<8 {
        guard let coroutine = coroutine(at: offset) else { break }
        coroutine._withUnsafeGuaranteedRef { $0.prefetchContext() }
      }
    }
    if let coroutine = coroutine(at: 2) {
      coroutine._withUnsafeGuaranteedRef { $0.prefetchFrames() }
    }
  }

  private func coroutine(at offset: Int) -> Unmanaged<Coroutine>? {
    guard offset < count, case .resume(let coroutine) = pointer(at: offset).pointee else {
      return nil
    }
    return coroutine
  }
}

extension Coroutine {
  /// Bytes of a coroutine's record, for prefetching all of it (200 on x86_64 today, with the
  /// trampoline and coroutine-local fields: four cache lines; a test checks that this still
  /// covers it).
  static let prefetchBytes = 256
}
