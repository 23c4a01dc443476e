import Coroutines
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The coroutines-versus-threads experiment: N tasks, each waiting on simulated blocking I/O
/// ten times, run as N coroutines on one loop (on dedicated stacks, then on the loop's shared
/// stacks) and as N threads.
public enum ConcurrencyWalkthrough {
  /// The sizes and the bounds of the experiment.
  public struct Configuration: Sendable {
    /// The task counts, one table row each.
    public var sizes = [10, 100, 1_000, 10_000]
    /// I/O waits per task.
    public var waitsPerTask = 10
    /// Seconds each wait takes.
    public var waitSeconds = 0.001
    /// The most threads the thread side may start; a row above it does not run.
    public var threadCap = 1_000
    /// Stack size of each thread and each coroutine, so both sides reserve the same.
    public var stackSize = 256 * 1024

    /// The defaults: 10 to 10 000 tasks, 10 waits of 1 ms, at most 1 000 threads.
    public init() {}
  }

  /// How one side did.
  public struct Measurement: Sendable, Equatable {
    /// Wall-clock seconds from the first task started to the last finished.
    public let seconds: Double
    /// Threads that ran task code: the distinct threads coroutines resumed on (the loop's
    /// threads stay alive, so each counts once), or the threads started.
    public let threads: Int
    /// Peak growth of resident memory, in bytes.
    public let peakMemory: Int
    /// Tasks that did all their waits.
    public let completedTasks: Int
  }

  /// One row: coroutines on both kinds of stack, and threads unless the cap or the system
  /// stopped them.
  public struct Row: Sendable {
    /// Tasks.
    public let tasks: Int
    /// The coroutine side, each coroutine on a dedicated stack (the default).
    public let coroutines: Measurement
    /// The coroutine side again, on the loop's shared stacks (`co_launch(stack: .shared)`).
    public let sharedStacks: Measurement
    /// The thread side, or why it did not run.
    public let threads: Result<Measurement, DidNotRun>
  }

  /// Why the thread side of a row did not run.
  public struct DidNotRun: Error, Equatable, CustomStringConvertible {
    /// The reason, for the table.
    public let description: String
  }

  /// The entry for `swift run examples concurrency`.
  public static let walkthrough = Walkthrough(
    name: "concurrency",
    summary: "N tasks x 10 I/O waits of 1 ms: coroutines on one thread vs one thread each",
    stubs: "the device the tasks wait on"
  ) { narrator in
    let configuration = Configuration()
    let rows = try run(configuration, narrator: narrator)
    guard
      rows.allSatisfy({
        $0.coroutines.completedTasks == $0.tasks && $0.sharedStacks.completedTasks == $0.tasks
      })
    else {
      throw WalkthroughCheckFailed("some coroutines did not finish their waits")
    }
    narrator.show("")
    for line in table(rows, configuration) { narrator.show(line) }
    narrator.show(
      "\n  A parked coroutine costs a few pages of stack and no thread, so one loop serves them"
        + "\n  all; every blocked thread holds a whole thread. On a shared stack a parked coroutine"
        + "\n  keeps only the frames it was using, in a buffer of their size: no fresh stack page"
        + "\n  to fault in per task, which is most of what a burst of new coroutines costs.")
  }

  /// Runs every size, coroutines first, narrating each measurement.
  public static func run(_ configuration: Configuration, narrator: Narrator) throws -> [Row] {
    try configuration.sizes.map { tasks in
      let coroutines = try measureCoroutines(tasks, configuration, stack: .dedicated)
      narrator.say("\(grouped(tasks)) tasks as coroutines: \(describe(coroutines))")
      let shared = try measureCoroutines(tasks, configuration, stack: .shared)
      narrator.say("\(grouped(tasks)) tasks on shared stacks: \(describe(shared))")
      let threads = measureThreads(tasks, configuration)
      switch threads {
      case .success(let measurement):
        narrator.say("\(grouped(tasks)) tasks as threads:    \(describe(measurement))")
      case .failure(let reason):
        narrator.say("\(grouped(tasks)) tasks as threads:    did not run (\(reason))")
      }
      return Row(tasks: tasks, coroutines: coroutines, sharedStacks: shared, threads: threads)
    }
  }

  /// N coroutines on a fresh loop on this thread, each on a stack of `mode` and suspending for
  /// every wait.
  static func measureCoroutines(
    _ tasks: Int, _ configuration: Configuration, stack mode: CoroutineStack.Mode
  ) throws -> Measurement {
    CoroutineStack.drainPool()
    let device = SimulatedDevice(latency: configuration.waitSeconds)
    let threadIDs = Locked<Set<pthread_t>>([])
    let completed = Locked(0)
    let sampler = MemorySampler()
    let start = DispatchTime.now()
    try CoroutineLoop.run {
      let all = (0..<tasks).map { _ in
        co_launch(stackSize: configuration.stackSize, stack: mode) {
          // The thread is noted when it changes, not after every wait: a lock per wait would
          // weigh on what is measured.
          var lastThread: pthread_t?
          for _ in 0..<configuration.waitsPerTask {
            try device.awaitRequest()
            let me = pthread_self()
            if me != lastThread {
              lastThread = me
              threadIDs.withLock { _ = $0.insert(me) }
            }
          }
          completed.withLock { $0 += 1 }
        }
      }
      try co_delay(0)  // let every task start and park in its first wait
      sampler.sample()
      for task in all { try co_await(task) }
    }
    return Measurement(
      seconds: seconds(since: start), threads: threadIDs.value.count, peakMemory: sampler.stop(),
      completedTasks: completed.value)
  }

  /// N threads, each blocking for every wait; refused above the cap.
  static func measureThreads(_ tasks: Int, _ configuration: Configuration) -> Result<
    Measurement, DidNotRun
  > {
    guard tasks <= configuration.threadCap else {
      return .failure(
        DidNotRun(description: "over the \(grouped(configuration.threadCap))-thread cap"))
    }
    let device = SimulatedDevice(latency: configuration.waitSeconds)
    let completed = Locked(0)
    let sampler = MemorySampler()
    let start = DispatchTime.now()
    let (started, refusal) = ThreadRunner.run(
      count: tasks, stackSize: configuration.stackSize, afterStarting: sampler.sample
    ) { _ in
      for _ in 0..<configuration.waitsPerTask {
        device.blockingRequest()
      }
      completed.withLock { $0 += 1 }
    }
    let peak = sampler.stop()
    if let refusal {
      return .failure(
        DidNotRun(
          description:
            "the system refused thread \(started + 1): \(String(cString: strerror(refusal)))"))
    }
    return .success(
      Measurement(
        seconds: seconds(since: start), threads: started, peakMemory: peak,
        completedTasks: completed.value))
  }

  /// The table the walkthrough prints.
  public static func table(_ rows: [Row], _ configuration: Configuration) -> [String] {
    func cells(_ measurement: Measurement) -> String {
      pad(String(format: "%.0f ms", measurement.seconds * 1000), 9)
        + pad(grouped(measurement.threads), 9) + pad(megabytes(measurement.peakMemory), 12)
    }
    func title(_ text: String) -> String { text.padding(toLength: 30, withPad: " ", startingAt: 0) }
    let columns = pad("wall", 9) + pad("threads", 9) + pad("peak memory", 12)
    let header1 =
      "  " + pad("tasks", 7) + " | " + title("coroutines") + " | "
      + title("coroutines, shared stacks") + " | threads"
    let header2 =
      "  " + pad("", 7) + " | " + columns + " | " + columns + " | " + columns
    let lines = rows.map { row in
      let threads: String
      switch row.threads {
      case .success(let measurement): threads = cells(measurement)
      case .failure(let reason): threads = "   did not run: \(reason)"
      }
      return "  " + pad(grouped(row.tasks), 7) + " | " + cells(row.coroutines) + " | "
        + cells(row.sharedStacks) + " | " + threads
    }
    let stack = "\(configuration.stackSize / 1024) KiB"
    let note =
      "  each task: \(configuration.waitsPerTask) waits of \(String(format: "%g", configuration.waitSeconds * 1000)) ms;"
      + " stacks: \(stack) per coroutine and per thread, a few of \(stack) for the shared ones;"
    let note2 =
      "  peak memory: growth of resident memory during the run (kernel thread stacks not included)"
    #if DEBUG
      let build = "  a debug build: `swift run -c release examples concurrency` for release numbers"
    #else
      let build = "  a release build"
    #endif
    return [header1, header2] + lines + [note, note2, build]
  }

  private static func describe(_ measurement: Measurement) -> String {
    String(format: "%.0f ms", measurement.seconds * 1000)
      + " on \(grouped(measurement.threads)) thread\(measurement.threads == 1 ? "" : "s"), "
      + "peak memory +\(megabytes(measurement.peakMemory))"
  }

  private static func seconds(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
  }

  private static func megabytes(_ bytes: Int) -> String {
    String(format: "%.1f MiB", Double(bytes) / 1_048_576)
  }

  /// `10000` as `10 000`.
  static func grouped(_ value: Int) -> String {
    let digits = Array(String(value))
    var result = ""
    for (index, digit) in digits.enumerated() {
      if index > 0 && (digits.count - index) % 3 == 0 { result.append(" ") }
      result.append(digit)
    }
    return result
  }

  private static func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : String(repeating: " ", count: width - text.count) + text
  }
}
