import CBaselines
import Coroutines
import Foundation
import Synchronization

/// `bench group`: a loop group against one loop, Go and Swift's own cross-thread resumption.
/// Each figure runs in this process (the default backend); the Go programs are built from
/// `Benchmarks/Go` when `go` is on the PATH.
enum GroupFigures {
  static let cores = ProcessInfo.processInfo.activeProcessorCount

  static func runSection() throws {
    print("")
    print("Loop groups (\(cores) cores, \(CoroutineBackend.current) backend):")
    print("")
    var rows: [Row] = []
    rows += try promiseRows()
    rows += try pingPongRows()
    rows += try skynetRows()
    rows += try echoRows()
    printTable(rows)
  }

  // MARK: A promise settled on another thread

  /// The median wake-up of a group coroutine awaiting a promise that another thread fulfills:
  /// from the moment that thread calls `fulfill` to the moment the coroutine runs again. Beside
  /// it, the same for a Swift task awaiting a continuation that the same thread resumes. The
  /// settling thread spins between jobs, so its own wake-up is not part of either figure.
  static func promiseRows() throws -> [Row] {
    progress("group: promise settled on another thread")
    let (ours, swift) = try wakeUpMedians()
    let crossing = cacheLineCrossing()
    if crossing > 0 {
      print(
        String(
          format: "A cache line crosses between two threads in %.0f ns in this run (one way); "
            + "the wake-up's median is %.1f crossings.", crossing, ours / crossing))
    }
    return [
      Row(
        figure: "wake-up by a promise settled on another thread, group coroutine, median",
        ours: ours, baseline: "Swift continuation resumed on another thread, median",
        baselineValue: swift, target: 0.2),
      Row(
        figure: "wake-up by a promise settled on another thread, group coroutine, median",
        ours: ours, baseline: "2 µs budget", baselineValue: 2_000, target: 1),
    ]
  }

  /// The medians (nanoseconds) of a group coroutine's wake-up and of a Swift task's, each by
  /// a promise (a continuation) that a spinning thread settles.
  static func wakeUpMedians() throws -> (ours: Double, swift: Double) {
    let settler = SpinningSettler()
    let group = CoroutineLoopGroup(threads: min(cores, 2))
    defer { group.shutdown() }
    let count = 20_000
    let ours = try medianOfRuns {
      try CoroutineLoop.run {
        try co_await(
          co_launch(on: group) { () -> [UInt64] in
            var samples: [UInt64] = []
            samples.reserveCapacity(count)
            for index in 0..<count {
              let promise = CoPromise<Int>()
              settler.post { promise.fulfill(index) }
              let value = try co_await(promise)
              samples.append(baseline_now_ns() - settler.lastSettle)
              precondition(value == index)
            }
            return samples
          })
      }
    }
    let swift = medianOfRuns {
      blockingAwait { () -> [UInt64] in
        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        for index in 0..<count {
          let value = await withUnsafeContinuation {
            (continuation: UnsafeContinuation<Int, Never>) in
            settler.post { continuation.resume(returning: index) }
          }
          samples.append(baseline_now_ns() - settler.lastSettle)
          precondition(value == index)
        }
        return samples
      }
    }
    settler.stop()
    return (ours, swift)
  }

  /// Nanoseconds for a cache line to cross between two unpinned threads, one way: the unit a
  /// wake-up from another thread is made of. On a virtual machine it depends on where the host
  /// puts the two virtual processors, and moves the wake-up with it.
  static func cacheLineCrossing() -> Double {
    baseline_cache_line_crossing_ns(100_000, 3)
  }

  /// The median of the samples of the best of three runs (by their own median).
  static func medianOfRuns(_ run: () throws -> [UInt64]) rethrows -> Double {
    var best = Double.infinity
    for _ in 0..<3 {
      let samples = try run().sorted()
      best = min(best, Double(samples[samples.count / 2]))
    }
    return best
  }

  // MARK: Ping-pong

  static func pingPongRows() throws -> [Row] {
    progress("group: channel ping-pong")
    let count = 200_000
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let ours = try bestNanoseconds(operations: count) {
      try CoroutineLoop.run {
        let pings = CoChannel<Int>()
        let pongs = CoChannel<Int>()
        // Launched from outside, so they start on different loops of the group.
        let responder = co_launch(on: group) {
          for value in pings { try pongs.send(value) }
        }
        let caller = co_launch(on: group) {
          for index in 0..<count {
            try pings.send(index)
            let echoed = try pongs.receive()
            precondition(echoed == index)
          }
          pings.close()
        }
        try co_await(caller)
        try co_await(responder)
      }
    }
    let figure = "channel ping-pong between coroutines of a two-loop group"
    switch GoProgram.run("pingpong", arguments: ["\(count)"], maxProcs: 2) {
    case .success(let numbers):
      return [
        Row(
          figure: figure, ours: ours, baseline: "Go unbuffered channels, GOMAXPROCS=2",
          baselineValue: numbers[1], target: 1.5)
      ]
    case .failure(let reason):
      progress("Go ping-pong skipped: \(reason)")
      print("Go's ping-pong is skipped (\(reason)): judged against AsyncStream instead.")
      return [
        Row(
          figure: figure, ours: ours, baseline: "AsyncStream ping-pong",
          baselineValue: SwiftBaselines.asyncStreamPingPong(count), target: 0.25)
      ]
    }
  }

  // MARK: Skynet

  /// A tree of coroutines, each summing its ten children's numbers: 1 111 111 coroutines for a
  /// million leaves.
  static func skynet(_ number: Int, _ size: Int) throws -> Int {
    if size == 1 { return number }
    let step = size / 10
    let children = (0..<10).map { index in
      co_launch { try skynet(number + index * step, step) }
    }
    var sum = 0
    for child in children { sum += try co_await(child) }
    return sum
  }

  static let skynetCoroutines = 1_111_111

  /// Nanoseconds per coroutine of skynet on a group of `threads` loops: the best of five runs.
  static func skynetOnGroup(threads: Int) throws -> Double {
    let group = CoroutineLoopGroup(threads: threads)
    defer { group.shutdown() }
    return try bestNanoseconds(operations: skynetCoroutines) {
      let sum = try CoroutineLoop.run {
        try co_await(co_launch(on: group) { try skynet(0, 1_000_000) })
      }
      precondition(sum == 499_999_500_000)
    }
  }

  static func skynetRows() throws -> [Row] {
    var perThreads: [Int: Double] = [:]
    for threads in Set([1, 2, cores]).sorted() {
      progress("group: skynet on \(threads) loop(s)")
      perThreads[threads] = try skynetOnGroup(threads: threads)
    }
    var rows: [Row] = []
    let all = perThreads[cores]!
    switch GoProgram.run("skynet", arguments: [], maxProcs: cores) {
    case .success(let numbers):
      rows.append(
        Row(
          figure: "skynet, per coroutine, \(cores)-loop group", ours: all,
          baseline: "Go, GOMAXPROCS=\(cores)", baselineValue: numbers[1] / Double(skynetCoroutines),
          target: 1))
    case .failure(let reason):
      var row = Row(
        figure: "skynet, per coroutine, \(cores)-loop group", ours: nil,
        baseline: "Go, GOMAXPROCS=\(cores)", baselineValue: nil)
      row.note = "Go skipped: \(reason)"
      rows.append(row)
    }
    for threads in perThreads.keys.sorted() where threads > 1 {
      var scaling = Row(
        figure: "skynet speed-up, \(threads)-loop group over one loop",
        ours: perThreads[1]! / perThreads[threads]!, unit: "×", baseline: "one loop",
        baselineValue: 1, target: threads == 2 ? 1.6 : Double(threads) / 2, atLeast: true)
      scaling.unit = "×"
      rows.append(scaling)
    }
    return rows
  }
}

extension GroupFigures {
  // MARK: Loopback echo

  /// The echo server on a group of a loop per core (a listener per loop) against the same on
  /// one loop, neither pinned, 1 000 connections: the fastest of three runs each. No target:
  /// on a machine with few cores the load generator takes one of them.
  static func echoRows() throws -> [Row] {
    let connections = 1_000
    var rates: [Int: Echo.LoadResult] = [:]
    for loops in Set([1, cores]).sorted() {
      let server = EchoServer(
        name: "ours, \(loops)-loop group", executable: EchoServer.sibling("echo-coroutines"),
        arguments: ["--loops", "\(loops)"])
      for round in 1...3 {
        progress("group: echo on \(loops) loop(s), round \(round)")
        let running = try server.start()
        let result = Echo.LoadResult(
          try EchoLoad.run(
            against: running, connections: connections, warmup: Echo.warmupSeconds,
            seconds: Echo.measuredSeconds, pinned: false))
        running.stop()
        if result.requestsPerSecond > rates[loops]?.requestsPerSecond ?? 0 { rates[loops] = result }
      }
    }
    guard cores > 1, let one = rates[1], let all = rates[cores] else { return [] }
    let row = Row(
      figure: "loopback echo, \(cores)-loop group (a listener per loop), 1 000 connections",
      ours: all.requestsPerSecond, unit: "req/s", baseline: "the same server on one loop",
      baselineValue: one.requestsPerSecond)
    print(
      String(
        format: "Echo, 1 000 connections, generator unpinned: one loop %.0f req/s (p99 %.0f µs), "
          + "%d loops %.0f req/s (p99 %.0f µs).", one.requestsPerSecond, one.p99, cores,
        all.requestsPerSecond, all.p99))
    return [row]
  }
}

/// A thread that runs posted jobs as soon as they arrive, spinning rather than sleeping between
/// them: "another thread" whose own wake-up costs nothing, so the figure is the waiting side's.
final class SpinningSettler: @unchecked Sendable {  // `job` is handed over through `pending`
  private let pending = Atomic<Bool>(false)
  private let running = Atomic<Bool>(true)
  private let settled = Atomic<UInt64>(0)
  private var job: (@Sendable () -> Void)?

  /// When the settler last started a job (`baseline_now_ns()`).
  var lastSettle: UInt64 { settled.load(ordering: .acquiring) }

  init() {
    Thread { [self] in
      while running.load(ordering: .relaxed) {
        guard pending.load(ordering: .acquiring) else { continue }
        let next = job!
        job = nil
        settled.store(baseline_now_ns(), ordering: .releasing)
        next()
        pending.store(false, ordering: .releasing)
      }
    }.start()
  }

  /// Runs `job` on the settler's thread; one job at a time.
  func post(_ job: @escaping @Sendable () -> Void) {
    while pending.load(ordering: .acquiring) {}
    self.job = job
    pending.store(true, ordering: .releasing)
  }

  func stop() { running.store(false, ordering: .relaxed) }
}

/// The Go baselines of `Benchmarks/Go`, built into a temporary directory and run, or why not.
enum GoProgram {
  /// The two numbers `name` prints, built once and run `runs` times, each in a process of its
  /// own: the run with the smallest second number (a time), as our figures keep the fastest of
  /// their processes.
  static func run(_ name: String, arguments: [String], maxProcs: Int, runs: Int = 1) -> Result<
    [Double], GoError
  > {
    guard let go = GoEchoServer.goCommand else { return .failure(.missing) }
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../../Go/\(name).go").standardized
    let binary = FileManager.default.temporaryDirectory.appendingPathComponent(
      "bench-go-\(name)-\(getpid())")
    defer { try? FileManager.default.removeItem(at: binary) }
    let build = Process()
    build.executableURL = go
    build.arguments = ["build", "-o", binary.path, source.path]
    guard (try? build.run()) != nil else { return .failure(.buildFailed(name)) }
    build.waitUntilExit()
    guard build.terminationStatus == 0 else { return .failure(.buildFailed(name)) }
    var best: [Double]?
    for _ in 0..<max(runs, 1) {
      let process = Process()
      process.executableURL = binary
      process.arguments = arguments
      process.environment = ["GOMAXPROCS": "\(maxProcs)"]
      let output = Pipe()
      process.standardOutput = output
      guard (try? process.run()) != nil else { return .failure(.runFailed(name)) }
      let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      process.waitUntilExit()
      let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
      guard process.terminationStatus == 0, numbers.count == 2 else {
        return .failure(.runFailed(name))
      }
      if best == nil || numbers[1] < best![1] { best = numbers }
    }
    return .success(best!)
  }

  enum GoError: Error, CustomStringConvertible {
    case missing, buildFailed(String), runFailed(String)

    var description: String {
      switch self {
      case .missing: "go is not on the PATH"
      case .buildFailed(let name): "go build of Benchmarks/Go/\(name).go failed"
      case .runFailed(let name): "Benchmarks/Go/\(name).go did not print its figures"
      }
    }
  }
}
