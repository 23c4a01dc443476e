import CBaselines
import CUContext
import Coroutines
import Foundation

/// Figures that depend on the backend run in a child process of this executable, started with
/// `COROUTINES_BACKEND` set: the backend is fixed when a process loads. A child prints one line
/// of numbers and exits.
enum Child {
  static let flag = "--figure"

  /// Runs the figure named on the command line, if this process is a child; returns false
  /// otherwise.
  static func runIfRequested() throws -> Bool {
    let arguments = CommandLine.arguments
    guard arguments.count == 3, arguments[1] == flag else { return false }
    let numbers: [Double]
    switch arguments[2] {
    case "shim":
      numbers = [CoroutineFigures.shimRoundTrip(Counts.shim(CoroutineBackend.current)), bareHere()]
    case "loop":
      numbers = [
        try CoroutineFigures.loopRoundTrip(Counts.loop(CoroutineBackend.current)), bareHere(),
      ]
    case "spawn": numbers = [try CoroutineFigures.spawnAndComplete(Counts.spawn)]
    case "burst": numbers = [try CoroutineFigures.launchBurst(Counts.spawn)]
    case "dump": numbers = try CoroutineFigures.dumpOfParked(100_000)
    case "promise":
      numbers = [try CoroutineFigures.promiseAcrossThreads(Counts.crossThread, mailbox: Mailbox())]
    case "delay0":
      numbers = [
        try CoroutineFigures.delayZeroRoundTrip(Counts.loop(CoroutineBackend.current)), bareHere(),
      ]
    case let name where name.hasPrefix("seed-coroutines-"):
      let count = Int(name.dropFirst("seed-coroutines-".count))!
      let cell = try SeedTable.coroutines(count, stack: .dedicated)
      numbers = [cell.wallNanoseconds, Double(cell.threads), cell.peakBytes]
    case let name where name.hasPrefix("seed-shared-"):
      let cell = try SeedTable.coroutines(
        Int(name.dropFirst("seed-shared-".count))!, stack: .shared)
      numbers = [cell.wallNanoseconds, Double(cell.threads), cell.peakBytes]
    case let name where name.hasPrefix("seed-threads-"):
      let cell = SeedTable.threads(Int(name.dropFirst("seed-threads-".count))!)
      numbers = [cell.wallNanoseconds, Double(cell.threads), cell.peakBytes]
    case "generator":
      numbers = [CoroutineFigures.generatorNext(Counts.loop(CoroutineBackend.current)), bareHere()]
    case "delay0-runtime-swaps", "generator-runtime-swaps":
      // The same round trips with every switch swapping Swift's exclusivity access sets through
      // the runtime, as where the shim cannot find the thread's set (Performance.md, "Where the
      // time goes"). The figures run on this thread, so forcing it here covers them.
      cu_exclusivity_force_runtime_swaps(1)
      let count = Counts.loop(CoroutineBackend.current)
      numbers = [
        arguments[2].hasPrefix("delay0")
          ? try CoroutineFigures.delayZeroRoundTrip(count)
          : CoroutineFigures.generatorNext(count),
        bareHere(),
      ]
    case SyncFigures.figure: numbers = try SyncFigures.measure()
    case "channel-loop":
      numbers = [try CoroutineFigures.channelPingPong(Counts.channel, acrossThreads: false)]
    case "channel-threads":
      numbers = [try CoroutineFigures.channelPingPong(Counts.crossThread, acrossThreads: true)]
    case "loop-shared":
      numbers = [try CoroutineFigures.sharedLoopRoundTrip(Counts.loop(CoroutineBackend.current))]
    case "alternate-shared":
      numbers = [try CoroutineFigures.sharedAlternation(Counts.loop(CoroutineBackend.current) / 2)]
    case "group-wakeup":
      let (ours, swift) = try GroupFigures.wakeUpMedians()
      numbers = [ours, swift, GroupFigures.cacheLineCrossing()]
    case let name where name.hasPrefix("skynet-"):
      numbers = [try GroupFigures.skynetOnGroup(threads: Int(name.dropFirst("skynet-".count))!)]
    case let name where name.hasPrefix("memory-"):
      let count = Int(name.dropFirst("memory-".count))!
      let result = try CoroutineFigures.residentMemoryPerParked(count, stack: .dedicated)
      numbers = [result.bytes, Double(result.parked), Double(result.failed)]
    case let name where name.hasPrefix("sharedmemory-"):
      let count = Int(name.dropFirst("sharedmemory-".count))!
      let result = try CoroutineFigures.residentMemoryPerParked(count, stack: .shared)
      numbers = [result.bytes, Double(result.parked), Double(result.failed)]
    case let name where name.hasPrefix("await-"):
      guard let awaits = try CrossThreadFigures.measure(name) else {
        fatalError("unknown figure \(name)")
      }
      numbers = awaits
    case SimulatedNetworkFigures.figure:
      numbers = try SimulatedNetworkFigures.measure(SimulatedNetworkFigures.figure)!
    case let name where name.hasPrefix("load-"):
      guard let load = try LoadFigures.measure(name) else { fatalError("unknown figure \(name)") }
      numbers = load
    default:
      fatalError("unknown figure \(arguments[2])")
    }
    print(numbers.map { String($0) }.joined(separator: " "))
    return true
  }

  /// The bare C switch this process's backend is judged against (register switch for fast,
  /// `swapcontext` for ucontext), measured here, right after the round trip: the host's speed
  /// drifted by up to 2× over one run of the benchmark, so a round trip and a baseline measured
  /// a minute apart in different processes compared the host's moods as much as the code.
  /// A tenth of the parent's round trips and three repetitions, still at every stack placement;
  /// 0 when the backend has no bare counterpart here.
  static func bareHere() -> Double {
    let value =
      CoroutineBackend.current == .fast
      ? baseline_register_switch_round_trip_ns(Counts.bareRegisterSwitch / 10, 3)
      : baseline_swapcontext_round_trip_ns(Counts.bareSwapcontext / 10, 3)
    return max(value, 0)
  }

  /// Runs `figure` in a child process on `backend` and returns the numbers it printed.
  static func measure(_ figure: String, on backend: CoroutineBackend) throws -> [Double] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = [flag, figure]
    var environment = ProcessInfo.processInfo.environment
    environment[CoroutineBackend.environmentVariable] = backend.rawValue
    process.environment = environment
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0,
      let line = text.split(separator: "\n").last
    else {
      throw BenchError.childFailed(figure, backend, process.terminationStatus)
    }
    return line.split(separator: " ").compactMap { Double($0) }
  }
}

enum BenchError: Error, CustomStringConvertible {
  case childFailed(String, CoroutineBackend, Int32)

  var description: String {
    switch self {
    case .childFailed(let figure, let backend, let status):
      "the \(figure) figure on \(backend) exited with status \(status)"
    }
  }
}

/// How many operations each figure times: enough for a stable best-of-5, few enough that the
/// whole run stays within a few minutes on a shared 2-core machine.
enum Counts {
  /// `BENCH_COUNT=n` makes a child time n operations instead, for profiling a figure under perf
  /// or callgrind.
  static let override = ProcessInfo.processInfo.environment["BENCH_COUNT"].flatMap { Int($0) }

  static let bareSwapcontext = 300_000
  static let bareRegisterSwitch = 10_000_000
  static func shim(_ backend: CoroutineBackend) -> Int {
    override ?? (backend == .fast ? 5_000_000 : 300_000)
  }
  static func loop(_ backend: CoroutineBackend) -> Int {
    override ?? (backend == .fast ? 1_000_000 : 300_000)
  }
  static var spawn: Int { override ?? 1_000_000 }
  static var crossThread: Int { override ?? 20_000 }
  static var channel: Int { override ?? 200_000 }
  static let taskYield = 1_000_000
  static let taskGroupChildren = 200_000
  static let asyncStream = 100_000
}
