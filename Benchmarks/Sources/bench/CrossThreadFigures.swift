import Coroutines
import Foundation
import Glibc

/// A coroutine on a ``CoroutineLoop`` awaiting an answer from another thread, the shapes users
/// have: a DispatchQueue answering (callbacks, Dispatch-based libraries), whose worker sleeps
/// between jobs, and a plain thread answering from a loop of its own that never sleeps. Each figure is the latency per await and the CPU the whole
/// process burnt meanwhile (user + system seconds per wall second, from `getrusage`), beside
/// Swift's `withCheckedContinuation` resumed by the same queue or thread: a wait that spins may
/// buy its latency with a core.
enum CrossThreadFigures {
  /// Who answers.
  enum Answerer: String, CaseIterable {
    case queue, thread

    var label: String { self == .queue ? "a DispatchQueue" : "a plain thread in a loop" }
  }

  /// How the waiter waits.
  enum Form: String, CaseIterable {
    /// `co_await(future)` of a promise the answerer fulfils.
    case future
    /// `co_await { done in … }`, the answerer calling `done`.
    case callback
    /// The baseline: a Swift task's `withCheckedContinuation`, the answerer resuming it.
    case continuation

    var label: String {
      switch self {
      case .future: "co_await(future)"
      case .callback: "co_await { callback }"
      case .continuation: "withCheckedContinuation"
      }
    }
  }

  /// The child figure's name: `await-<form>-<answerer>`.
  static func figure(_ form: Form, _ answerer: Answerer) -> String {
    "await-\(form.rawValue)-\(answerer.rawValue)"
  }

  /// Measures the figure named `name` if it is one of these: nanoseconds per await, then CPU
  /// seconds per wall second over the whole measurement.
  static func measure(_ name: String) throws -> [Double]? {
    for form in Form.allCases {
      for answerer in Answerer.allCases where figure(form, answerer) == name {
        let post = poster(answerer)
        let count = Counts.crossThread
        let (nanoseconds, cpu) = try withCPUPerWallSecond {
          switch form {
          case .future: try awaitFutures(count, post: post)
          case .callback: try awaitCallbacks(count, post: post)
          case .continuation: awaitContinuations(count, post: post)
          }
        }
        return [nanoseconds, cpu]
      }
    }
    return nil
  }

  /// The rows of this section: for each answerer and form, the latency and the CPU beside the
  /// continuation's, measured in child processes on the default backend.
  static func rows() throws -> [Row] {
    var rows: [Row] = []
    let backend = CoroutineBackend.current
    for answerer in Answerer.allCases {
      progress("awaits answered by \(answerer.label)")
      let baseline = try bestOfProcesses(figure(.continuation, answerer), on: backend)
      for form in [Form.future, .callback] {
        let ours = try bestOfProcesses(figure(form, answerer), on: backend)
        let what = "\(form.label) on a loop, answered by \(answerer.label) (\(backend))"
        let swift = "\(Form.continuation.label), same answerer"
        rows.append(
          Row(
            figure: "latency per await, \(what)", ours: ours[0], baseline: swift,
            baselineValue: baseline[0], target: 1))
        rows.append(
          Row(
            figure: "CPU seconds per wall second, \(what)", ours: ours[1], unit: "CPU s/s",
            baseline: swift, baselineValue: baseline[1], target: 1.5))
      }
    }
    return rows
  }

  /// How the answerer is handed a job.
  private static func poster(_ answerer: Answerer)
    -> @Sendable (@escaping @Sendable () -> Void)
    -> Void
  {
    switch answerer {
    case .queue:
      let queue = DispatchQueue(label: "bench.answer")
      return { job in queue.async(execute: job) }
    case .thread:
      // Left spinning until the process, a child that measures one figure, exits.
      let settler = SpinningSettler()
      return { job in settler.post(job) }
    }
  }

  private static func awaitFutures(
    _ count: Int, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
  ) throws -> Double {
    try CoroutineLoop.run {
      try bestNanoseconds(operations: count) {
        for index in 0..<count {
          let promise = CoPromise<Int>()
          post { promise.fulfill(index) }
          let value = try co_await(promise)
          precondition(value == index)
        }
      }
    }
  }

  private static func awaitCallbacks(
    _ count: Int, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
  ) throws -> Double {
    try CoroutineLoop.run {
      try bestNanoseconds(operations: count) {
        for index in 0..<count {
          let value: Int = try co_await { done in post { done(.success(index)) } }
          precondition(value == index)
        }
      }
    }
  }

  private static func awaitContinuations(
    _ count: Int, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
  ) -> Double {
    blockingAwait {
      await bestNanoseconds(operations: count) {
        for index in 0..<count {
          let value = await withCheckedContinuation {
            (continuation: CheckedContinuation<Int, Never>) in
            post { continuation.resume(returning: index) }
          }
          precondition(value == index)
        }
      }
    }
  }

  /// Runs `body` and returns what it returned with the process's CPU seconds (user + system,
  /// every thread) per wall second meanwhile.
  private static func withCPUPerWallSecond(_ body: () throws -> Double) rethrows -> (
    Double, Double
  ) {
    let cpuBefore = cpuSeconds()
    let wallBefore = Date()
    let result = try body()
    let wall = Date().timeIntervalSince(wallBefore)
    return (result, (cpuSeconds() - cpuBefore) / wall)
  }

  private static func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double {
      Double(time.tv_sec) + Double(time.tv_usec) / 1e6
    }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
  }
}
