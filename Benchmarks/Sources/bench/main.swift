import CBaselines
import Coroutines
import Foundation

// `make bench`: every figure of ours beside a baseline measured in this same run, with the
// target ratio each is judged by. Backend-dependent figures run in child processes.

// `bench http` or `bench --figure http`: the HTTP section alone (before the child figures,
// which take `--figure NAME` too).
if ["http", "--figure http"].contains(CommandLine.arguments.dropFirst().joined(separator: " ")) {
  try HTTPBench.runSection()
  exit(0)
}

if try DeepChainFigures.runIfRequested() { exit(0) }
if try Child.runIfRequested() { exit(0) }
if try SyncFigures.reportAloneIfRequested() { exit(0) }

let started = baseline_now_ns()
func progress(_ what: String) {
  FileHandle.standardError.write("… \(what)\n".data(using: .utf8)!)
}

// `bench echo`: the loopback echo section alone.
if CommandLine.arguments.dropFirst().first == "echo" {
  try Echo.runSection()
  exit(0)
}

// `bench load`: the section on holding up under load alone.
if try LoadFigures.runSectionIfRequested() { exit(0) }
// `bench simnet`: the simulated network's row alone.
if try SimulatedNetworkFigures.runSectionIfRequested() { exit(0) }

// `bench group`: the loop group's section alone.
if CommandLine.arguments.dropFirst().first == "group" {
  try GroupFigures.runSection()
  exit(0)
}

let backends = CoroutineBackend.allCases.filter(\.isAvailable)
/// Child processes per timed figure, of which the fastest is kept: the same binary's
/// `co_delay(0)` moved by a third from one process to the next, as this shared host's speed
/// changes from minute to minute (see Performance.md, "How it is measured"). The bare baselines
/// keep the best of eight stack placements, so our figures keep the best of several processes.
let processesPerFigure = 3
func perBackend(_ figure: String) throws -> [CoroutineBackend: [Double]] {
  var results: [CoroutineBackend: [Double]] = [:]
  for backend in backends {
    progress("\(figure) on \(backend)")
    results[backend] = try bestOfProcesses(figure, on: backend)
  }
  return results
}
/// The run with the smallest first number (a time) among `processesPerFigure` child processes.
func bestOfProcesses(_ figure: String, on backend: CoroutineBackend) throws -> [Double] {
  var best: [Double] = []
  for _ in 0..<processesPerFigure {
    let numbers = try Child.measure(figure, on: backend)
    if best.isEmpty || (numbers.first ?? .infinity) < (best.first ?? .infinity) { best = numbers }
  }
  return best
}

// `bench seed`: the coroutines-versus-threads table alone (and its plot).
if CommandLine.arguments.dropFirst().first == "seed" {
  try SeedTable.printSection(
    SeedTable.measure(processes: processesPerFigure) { try bestOfProcesses($0, on: .current) })
  exit(0)
}

progress("C baselines")
let bareSwapcontext = baseline_swapcontext_round_trip_ns(Counts.bareSwapcontext, 5)
let registerSwitch = baseline_register_switch_round_trip_ns(Counts.bareRegisterSwitch, 5)
let bareRegisterSwitch: Double? = registerSwitch > 0 ? registerSwitch : nil

progress("frames spanning a bare switch")
// Frames spanning the switch on each side: the C test's own function is one, so the row for 0 is
// the plain baseline above.
let spanningFrames = [0, 1, 2, 4]
let spanning = spanningFrames.map { frames in
  frames == 0
    ? registerSwitch
    : baseline_register_switch_spanning_ns(Int32(frames - 1), Counts.bareRegisterSwitch / 10, 5)
}

progress("Swift Concurrency baselines")
let mailbox = Mailbox()
let taskYield = SwiftBaselines.taskYield(Counts.taskYield)
let continuation = SwiftBaselines.continuationAcrossThreads(Counts.crossThread, mailbox: mailbox)
let taskGroupChild = SwiftBaselines.taskGroupChildren(Counts.taskGroupChildren)
let asyncStream = SwiftBaselines.asyncStreamPingPong(Counts.asyncStream)

let shim = try perBackend("shim")
let loop = try perBackend("loop")
let delayZero = try perBackend("delay0")
let spawn = try perBackend("spawn")
let promise = try perBackend("promise")
let generator = try perBackend("generator")
let channelLoop = try perBackend("channel-loop")
let channelThreads = try perBackend("channel-threads")
let sync = try perBackend(SyncFigures.figure)
progress("shared-stack round trips on \(CoroutineBackend.current)")
let sharedLoop = try bestOfProcesses("loop-shared", on: CoroutineBackend.current)
let sharedAlternation = try bestOfProcesses("alternate-shared", on: CoroutineBackend.current)
var dedicatedMemory: [(Int, [Double])] = []
// A million dedicated stacks: about 4.5 GB resident and 5 s here (each stack's first page is a
// kernel page allocation); before Linux 6.13 the row reports how many could not get a stack.
for count in [10_000, 100_000, 1_000_000] {
  progress("memory, \(count) parked on dedicated stacks")
  dedicatedMemory.append((count, try Child.measure("memory-\(count)", on: .current)))
}
var sharedMemory: [(Int, [Double])] = []
for count in [10_000, 100_000, 1_000_000] {
  progress("memory, \(count) parked on shared stacks")
  sharedMemory.append((count, try Child.measure("sharedmemory-\(count)", on: .current)))
}

let seed = try SeedTable.measure(processes: processesPerFigure) {
  try bestOfProcesses($0, on: .current)
}

progress("launch burst: Go, GOMAXPROCS=1")
let goBurst = GoProgram.run(
  "seed", arguments: ["burst", "\(Counts.spawn)"], maxProcs: 1, runs: processesPerFigure)
progress("launch burst on \(CoroutineBackend.current)")
let burst = try bestOfProcesses("burst", on: .current)

var rows: [Row] = []
for backend in backends {
  // Each round trip is judged against the bare switch measured in its own child process, right
  // after it (see `Child.bareHere()`).
  func bare(_ numbers: [Double]?) -> Double? {
    guard let numbers, numbers.count > 1, numbers[1] > 0 else { return nil }
    return numbers[1]
  }
  let bareName = backend == .fast ? "bare C register switch" : "bare C swapcontext"
  rows.append(
    Row(
      figure: "resume+suspend round trip, public API (\(backend))", ours: loop[backend]?[0],
      baseline: bareName, baselineValue: bare(loop[backend]),
      target: backend == .fast ? 3 : 1.15))
  rows.append(
    Row(
      figure: "resume+suspend round trip, co_delay(0) (\(backend))", ours: delayZero[backend]?[0],
      baseline: bareName, baselineValue: bare(delayZero[backend]),
      target: backend == .fast ? 3 : 1.15))
  rows.append(
    Row(
      figure: "resume+suspend round trip, generator next() (\(backend))",
      ours: generator[backend]?[0], baseline: bareName, baselineValue: bare(generator[backend]),
      target: backend == .fast ? 3 : 1.15))
  rows.append(
    Row(
      figure: "resume+suspend round trip, shim only (\(backend))", ours: shim[backend]?[0],
      baseline: bareName, baselineValue: bare(shim[backend])))
  rows.append(
    Row(
      figure: "resume+suspend round trip, public API (\(backend))", ours: loop[backend]?[0],
      baseline: "Swift Task.yield", baselineValue: taskYield))
}
for backend in backends {
  rows.append(
    Row(
      figure: "spawn+complete, 1 000 000 coroutines (\(backend))", ours: spawn[backend]?[0],
      baseline: "TaskGroup child", baselineValue: taskGroupChild,
      target: backend == CoroutineBackend.current ? 0.25 : nil))
}
switch goBurst {
case .success(let numbers):
  rows.append(
    Row(
      figure: "launch burst, 1 000 000 coroutines each counting once (\(CoroutineBackend.current))",
      ours: burst[0], baseline: "Go, GOMAXPROCS=1", baselineValue: numbers[1], target: 0.3))
case .failure(let reason):
  var row = Row(
    figure: "launch burst, 1 000 000 coroutines each counting once (\(CoroutineBackend.current))",
    ours: burst[0], baseline: "Go, GOMAXPROCS=1", baselineValue: nil)
  row.note = "Go skipped: \(reason)"
  rows.append(row)
}
for backend in backends {
  rows.append(
    Row(
      figure: "await of a promise settled on another thread (\(backend))",
      ours: promise[backend]?[0], baseline: "continuation resumed on another thread",
      baselineValue: continuation, target: backend == CoroutineBackend.current ? 0.5 : nil))
}
rows += try CrossThreadFigures.rows()
for backend in backends {
  rows.append(
    Row(
      figure: "channel ping-pong, one loop (\(backend))", ours: channelLoop[backend]?[0],
      baseline: "AsyncStream ping-pong", baselineValue: asyncStream,
      target: backend == CoroutineBackend.current ? 1.0 / 15 : nil))
  rows.append(
    Row(
      figure: "channel ping-pong, two threads (\(backend))", ours: channelThreads[backend]?[0],
      baseline: "AsyncStream ping-pong", baselineValue: asyncStream))
}
rows += SyncFigures.rows(sync)
let current = CoroutineBackend.current
rows.append(
  Row(
    figure: "round trip, public API, shared stack, no other occupant (\(current))",
    ours: sharedLoop[0], baseline: "same on a dedicated stack", baselineValue: loop[current]?[0]))
rows.append(
  Row(
    figure: "resumption, two coroutines taking turns on one shared stack (\(current))",
    ours: sharedAlternation[0], baseline: "round trip on a dedicated stack",
    baselineValue: loop[current]?[0]))
for (mode, budget, measurements) in [
  ("dedicated", 5.0, dedicatedMemory), ("shared", 1.0, sharedMemory),
] {
  for (count, memory) in measurements {
    let parked = Int(memory[1])
    let failed = Int(memory[2])
    let label = count.formatted(.number.grouping(.automatic))
      .replacingOccurrences(of: ",", with: " ")
    var row = Row(
      figure: "resident memory per parked coroutine, \(label) \(mode) stacks",
      ours: memory[0] / 1024, unit: "KiB", baseline: "\(Int(budget)) KiB budget",
      baselineValue: budget, target: 1)
    if failed > 0 {
      // Out of memory, or, before Linux 6.13 (two mappings per stack), past vm.max_map_count:
      // about 32 700 at its default. The error's errno can't tell the two apart (both ENOMEM).
      row.shortfall = "only \(parked) of \(count) could get a stack: out of memory or mappings"
    }
    rows.append(row)
  }
}

rows += try DeepChainFigures.rows(backends: backends)

print("")
print(
  "swift-coroutines benchmarks — default backend \(CoroutineBackend.current), best of 5 runs "
    + "in each of \(processesPerFigure) processes (spawn: one run per process)")
print("")
printTable(rows)
if spanning.allSatisfy({ $0 > 0 }) {
  print("")
  print(
    "Return prediction: the bare register switch with plain C frames entered before it and "
      + "returned from after it, on each side (each such return is mispredicted):")
  print("")
  print(
    "| Frames spanning the switch, each side | "
      + spanningFrames.map(String.init).joined(separator: " | ") + " |")
  print("|---|" + String(repeating: "---:|", count: spanningFrames.count))
  print(
    "| ns per round trip | " + spanning.map { String(format: "%.1f", $0) }.joined(separator: " | ")
      + " |")
}
try SeedTable.printSection(seed)
print("")
print(
  String(
    format: "Baselines in this run: bare swapcontext %.1f ns, bare register switch %@ (in this "
      + "process; each round-trip row's bare switch was measured in the same child process as "
      + "the round trip), Task.yield %.1f ns, continuation across threads %.1f ns, "
      + "TaskGroup child %.1f ns, AsyncStream ping-pong %.1f ns.",
    bareSwapcontext, bareRegisterSwitch.map { String(format: "%.1f ns", $0) } ?? "n/a",
    taskYield, continuation, taskGroupChild, asyncStream))
try LoadFigures.printSection()
try SimulatedNetworkFigures.printSection()
try Echo.runSection()
try HTTPBench.runSection()
try GroupFigures.runSection()
print("")
print(String(format: "Total time %.1f s.", Double(baseline_now_ns() - started) / 1e9))
