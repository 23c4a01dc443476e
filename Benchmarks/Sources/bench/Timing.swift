import CBaselines
import Dispatch

/// Nanoseconds per operation: the best of `repetitions` runs, each doing `operations` of them.
/// The best run is the one least disturbed by the other users of this shared machine.
func bestNanoseconds(operations: Int, repetitions: Int = 5, _ run: () throws -> Void) rethrows
  -> Double
{
  var best = Double.infinity
  for _ in 0..<repetitions {
    let start = baseline_now_ns()
    try run()
    best = min(best, Double(baseline_now_ns() - start) / Double(operations))
  }
  return best
}

/// The async form of ``bestNanoseconds(operations:repetitions:_:)``.
func bestNanoseconds(
  operations: Int, repetitions: Int = 5, _ run: @Sendable () async -> Void
) async -> Double {
  var best = Double.infinity
  for _ in 0..<repetitions {
    let start = baseline_now_ns()
    await run()
    best = min(best, Double(baseline_now_ns() - start) / Double(operations))
  }
  return best
}

/// Runs `work` on Swift's cooperative pool and blocks the calling thread until it is done, so
/// the synchronous driver can measure async baselines.
func blockingAwait<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
  let done = DispatchSemaphore(value: 0)
  let box = ResultBox<T>()
  Task.detached {
    box.value = await work()
    done.signal()
  }
  done.wait()
  return box.value!
}

private final class ResultBox<T>: @unchecked Sendable {  // written before the semaphore signals
  var value: T?
}
