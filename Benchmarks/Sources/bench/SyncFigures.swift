import Coroutines
import Foundation
import Synchronization

/// The coroutine locks and coroutine-locals, each beside a baseline from the same child
/// process: uncontended `CoMutex` against a 20 ns budget (and `Mutex`, `NSLock` for scale), a
/// `CoMutex` handed back and forth between two coroutines on one loop against this library's
/// channel ping-pong on one loop, and a `CoLocal` read against a 5 ns budget (and a `TaskLocal`
/// read in a task for scale). `bench --sync` prints these rows alone.
enum SyncFigures {
  static let figure = "sync"
  static let uncontended = 10_000_000
  static let handOvers = 200_000
  static let reads = 10_000_000

  /// The numbers a child prints: CoMutex uncontended, Mutex, NSLock, CoMutex hand-over round
  /// trip, channel ping-pong round trip, CoLocal read, TaskLocal read (ns each).
  /// `SYNC_ONLY=handover|channel|local|uncontended` times one of them alone, for a profiler.
  static func measure() throws -> [Double] {
    if let only = ProcessInfo.processInfo.environment["SYNC_ONLY"] {
      switch only {
      case "handover": return [try coMutexHandOver()]
      case "local": return [try coLocalRead()]
      case "channel": return [try CoroutineFigures.channelPingPong(handOvers, acrossThreads: false)]
      default: return [try coMutexUncontended()]
      }
    }
    return [
      try coMutexUncontended(), mutexUncontended(), nsLockUncontended(),
      try coMutexHandOver(), try CoroutineFigures.channelPingPong(handOvers, acrossThreads: false),
      try coLocalRead(), taskLocalRead(),
    ]
  }

  static func rows(_ figures: [CoroutineBackend: [Double]]) -> [Row] {
    var rows: [Row] = []
    for backend in CoroutineBackend.allCases.filter(\.isAvailable) {
      guard let numbers = figures[backend], numbers.count == 7 else { continue }
      rows += [
        Row(
          figure: "CoMutex lock+unlock, uncontended (\(backend))", ours: numbers[0],
          baseline: "20 ns budget", baselineValue: 20, target: 1),
        Row(
          figure: "CoMutex lock+unlock, uncontended (\(backend))", ours: numbers[0],
          baseline: "Synchronization.Mutex withLock", baselineValue: numbers[1]),
        Row(
          figure: "CoMutex lock+unlock, uncontended (\(backend))", ours: numbers[0],
          baseline: "NSLock lock+unlock", baselineValue: numbers[2]),
        // Judged on the default backend, as the channel rows are: on ucontext both are two
        // `swapcontext` calls per round trip, which is nearly all of either figure.
        Row(
          figure: "CoMutex handed back and forth, one loop (\(backend))", ours: numbers[3],
          baseline: "channel ping-pong, one loop", baselineValue: numbers[4],
          target: backend == CoroutineBackend.current ? 1 : nil),
        Row(
          figure: "CoLocal read, bound (\(backend))", ours: numbers[5], baseline: "5 ns budget",
          baselineValue: 5, target: 1),
        Row(
          figure: "CoLocal read, bound (\(backend))", ours: numbers[5],
          baseline: "TaskLocal read in a task", baselineValue: numbers[6]),
      ]
    }
    return rows
  }

  /// With `--sync` on the command line: measures and prints these rows only, for working on
  /// them without the whole run. True if it did.
  static func reportAloneIfRequested() throws -> Bool {
    guard CommandLine.arguments.dropFirst().first == "--sync" else { return false }
    var figures: [CoroutineBackend: [Double]] = [:]
    // Not `bestOfProcesses`: main.swift's globals are not set yet when this runs before them.
    for backend in CoroutineBackend.allCases.filter(\.isAvailable) {
      for _ in 0..<3 {
        let numbers = try Child.measure(figure, on: backend)
        if (numbers.first ?? .infinity) < (figures[backend]?.first ?? .infinity) {
          figures[backend] = numbers
        }
      }
    }
    printTable(rows(figures))
    return true
  }

  static func coMutexUncontended() throws -> Double {
    try CoroutineLoop.run {
      let mutex = CoMutex()
      return try bestNanoseconds(operations: uncontended) {
        for _ in 0..<uncontended {
          try mutex.lock()
          mutex.unlock()
        }
      }
    }
  }

  static func mutexUncontended() -> Double {
    let mutex = Mutex(0)
    let time = bestNanoseconds(operations: uncontended) {
      for _ in 0..<uncontended { mutex.withLock { $0 &+= 1 } }
    }
    precondition(mutex.withLock { $0 } == 5 * uncontended)
    return time
  }

  static func nsLockUncontended() -> Double {
    let lock = NSLock()
    return bestNanoseconds(operations: uncontended) {
      for _ in 0..<uncontended {
        lock.lock()
        lock.unlock()
      }
    }
  }

  /// Round trips of a `CoMutex` between two coroutines on one loop: each unlock hands it to
  /// the other, waiting, coroutine, and each lock then waits for it to come back.
  static func coMutexHandOver() throws -> Double {
    try CoroutineLoop.run {
      try bestNanoseconds(operations: handOvers) {
        let mutex = CoMutex()
        try mutex.lock()
        let other = co_launch {
          try mutex.lock()
          for _ in 0..<handOvers {
            mutex.unlock()
            try mutex.lock()
          }
          mutex.unlock()
        }
        try co_delay(0)  // the other coroutine is waiting now
        for _ in 0..<handOvers {
          mutex.unlock()
          try mutex.lock()
        }
        mutex.unlock()
        try other.await()
      }
    }
  }

  static let local = CoLocal(default: 0)

  static func coLocalRead() throws -> Double {
    try CoroutineLoop.run {
      local.withValue(1) {
        var sum = 0
        let time = bestNanoseconds(operations: reads) {
          for _ in 0..<reads { sum &+= local.value }
        }
        precondition(sum == 5 * reads)
        return time
      }
    }
  }

  @TaskLocal static var taskLocal = 0

  static func taskLocalRead() -> Double {
    blockingAwait {
      await $taskLocal.withValue(1) {
        await bestNanoseconds(operations: reads) { () async in
          var sum = 0
          for _ in 0..<reads { sum &+= taskLocal }
          precondition(sum == reads)
        }
      }
    }
  }
}
