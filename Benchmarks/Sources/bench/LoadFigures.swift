import CBaselines
import Coroutines
import Foundation

/// What a server meets under load, each figure beside its goal: how late a socket's data is
/// seen while a coroutine computes in slices, the memory that a million answered timeouts
/// leave behind one long timer, and how long a writer's release of 100 000 queued readers
/// takes. Each runs in a child process of its own (so the resident memory is the figure's own);
/// `bench load` prints these rows alone.
enum LoadFigures {
  static let wakeUpFigure = "load-wakeup"
  static let timeoutsFigure = "load-timeouts"
  static let readersFigure = "load-readers"

  /// The computing coroutine's slice: it runs this long between two `co_delay(0)`.
  static let slice: UInt64 = 1_000_000
  /// Messages the writer thread sends, one every 2–4 ms.
  static let messages = 400
  static let timeouts = 1_000_000
  static let readers = 100_000

  /// Runs one of this section's figures if the child was asked for it; the numbers it prints,
  /// or nil for another figure.
  static func measure(_ figure: String) throws -> [Double]? {
    switch figure {
    case wakeUpFigure: return try socketWakeUpUnderComputation()
    case timeoutsFigure: return [try memoryOfAnsweredTimeouts()]
    case readersFigure: return try writerReleasingReaders()
    default: return nil
    }
  }

  static func rows(wakeUp: [Double], timeouts: [Double], readers: [Double]) -> [Row] {
    let sliceMs = Double(slice) / 1e6
    return [
      Row(
        figure: "socket wake-up beside a coroutine computing in 1 ms slices, p50",
        ours: wakeUp[0] / 1e6, unit: "ms", baseline: "one slice", baselineValue: sliceMs,
        target: 1.5),
      Row(
        figure: "socket wake-up beside a coroutine computing in 1 ms slices, p99",
        ours: wakeUp[1] / 1e6, unit: "ms", baseline: "one slice", baselineValue: sliceMs,
        target: 1.5),
      Row(
        figure:
          "resident memory after 1 000 000 answered co_await(_:timeout: 30) behind a live timer",
        ours: timeouts[0] / 1_048_576, unit: "MiB", baseline: "8 MiB budget", baselineValue: 8,
        target: 1),
      Row(
        figure: "CoRWLock: a writer's release of 100 000 queued readers",
        ours: readers[0] / 1e6, unit: "ms", baseline: "10 ms budget", baselineValue: 10,
        target: 1),
      Row(
        figure: "CoRWLock: 100 000 queued readers, release until the last has read",
        ours: readers[1] / 1e6, unit: "ms", baseline: "100 000 co_delay(0) round trips",
        baselineValue: readers[2] / 1e6),
    ]
  }

  /// `bench load`: this section's rows alone.
  static func runSectionIfRequested() throws -> Bool {
    guard CommandLine.arguments.dropFirst().first == "load" else { return false }
    try printSection()
    return true
  }

  static func printSection() throws {
    FileHandle.standardError.write(
      "… load: socket wake-up, timeouts, readers\n".data(using: .utf8)!)
    let current = CoroutineBackend.current
    let wakeUp = try Child.measure(wakeUpFigure, on: current)
    let timeouts = try Child.measure(timeoutsFigure, on: current)
    let readers = try Child.measure(readersFigure, on: current)
    print("")
    print("Holding up under load (\(current) backend, one loop):")
    print("")
    printTable(rows(wakeUp: wakeUp, timeouts: timeouts, readers: readers))
  }

  /// The p50 and p99 delay, in nanoseconds, between a thread writing a timestamp into a socket
  /// and a coroutine reading it, while another coroutine of the same loop computes in slices of
  /// `slice` and yields with `co_delay(0)` between them.
  static func socketWakeUpUnderComputation() throws -> [Double] {
    var ends: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else {
      throw POSIXError(.EMFILE)
    }
    let reader = ends[0]
    let writer = ends[1]
    _ = fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) | O_NONBLOCK)
    defer {
      close(reader)
      close(writer)
    }
    let sender = Thread {
      var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
      for _ in 0..<messages {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        usleep(2_000 + UInt32(seed >> 33) % 2_000)
        var stamp = UInt64(baseline_now_ns())
        _ = write(writer, &stamp, 8)
      }
    }
    let delays = try CoroutineLoop.run { () -> [UInt64] in
      let shared = Stamps()
      let computing = co_launch { () throws -> Int in
        var slices = 0
        while !shared.stop {
          let start = baseline_now_ns()
          while baseline_now_ns() &- start < slice {}
          slices += 1
          try co_delay(0)
        }
        return slices
      }
      sender.start()
      var delays: [UInt64] = []
      var stamp: UInt64 = 0
      while delays.count < messages {
        let count = read(reader, &stamp, 8)
        if count == 8 {
          delays.append(UInt64(baseline_now_ns()) &- stamp)
        } else if count < 0, errno == EAGAIN {
          _ = try co_wait(fd: reader, for: .readable)
        } else {
          throw POSIXError(.EIO)
        }
      }
      shared.stop = true
      _ = try co_await(computing)
      return delays
    }
    let sorted = delays.sorted()
    return [Double(sorted[sorted.count / 2]), Double(sorted[sorted.count * 99 / 100])]
  }

  /// Resident bytes added by `timeouts` awaits with a 30 s timeout, each answered at once by a
  /// job of the loop, while one `co_delay(10)` stays pending: every timeout's timer is
  /// cancelled, and the live one keeps them from surfacing.
  static func memoryOfAnsweredTimeouts() throws -> Double {
    try CoroutineLoop.run { () -> Double in
      let loop = CoroutineLoop.current!
      let longTimer = co_launch { try co_delay(10) }
      // One round first, so that the loop's own structures have their working size.
      for _ in 0..<1_000 { try answeredAwait(on: loop) }
      let before = CoroutineFigures.residentBytes()
      for _ in 0..<timeouts { try answeredAwait(on: loop) }
      let after = CoroutineFigures.residentBytes()
      longTimer.cancel()
      return Double(max(after - before, 0))
    }
  }

  private static func answeredAwait(on loop: CoroutineLoop) throws {
    let promise = CoPromise<Int>()
    loop.schedule { promise.fulfill(1) }
    _ = try co_await(promise, timeout: 30)
  }

  /// A writer holds a `CoRWLock` while `readers` coroutines queue for reading, then releases
  /// it. Returns the nanoseconds the release took (the writer's `unlock`, which wakes every
  /// reader), from the release until the last reader had read, and, as a baseline,
  /// `readers` `co_delay(0)` round trips: the least that resuming every reader once costs.
  static func writerReleasingReaders() throws -> [Double] {
    try CoroutineLoop.run { () -> [Double] in
      let lock = CoRWLock()
      let gate = CoPromise<Void>()
      let stamps = Stamps()
      let writer = co_launch {
        try lock.withWriteLock {
          try co_await(gate)
          stamps.first = UInt64(baseline_now_ns())
        }
        stamps.second = UInt64(baseline_now_ns())
      }
      try co_delay(0)
      let group = CoWaitGroup()
      group.add(readers)
      for _ in 0..<readers {
        co_launch {
          try lock.withReadLock { stamps.last = max(stamps.last, UInt64(baseline_now_ns())) }
          group.done()
        }
      }
      // Every reader starts and queues behind the writer before this coroutine resumes.
      try co_delay(0)
      gate.fulfill(())
      try group.wait()
      try co_await(writer)
      let (start, end, last) = (stamps.first, stamps.second, stamps.last)
      let baselineStart = UInt64(baseline_now_ns())
      for _ in 0..<readers { try co_delay(0) }
      let baseline = UInt64(baseline_now_ns()) &- baselineStart
      return [Double(end &- start), Double(last &- start), Double(baseline)]
    }
  }
}

/// What coroutines of one loop leave for each other: clock readings, and a flag to stop.
private final class Stamps: @unchecked Sendable {  // read and written on one loop's thread only
  var first: UInt64 = 0
  var second: UInt64 = 0
  var last: UInt64 = 0
  var stop = false
}
