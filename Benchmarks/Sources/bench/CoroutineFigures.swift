import CUContext
import Coroutines
import Foundation
import Synchronization

/// The library's figures. Each runs in a child process started with the backend to measure,
/// because the backend is chosen once per process, when it loads.
enum CoroutineFigures {
  /// The shim alone: `cu_fiber_resume` + `cu_fiber_suspend` (the switch plus Swift's
  /// exclusivity-set swap), no runtime around it.
  static func shimRoundTrip(_ count: Int) -> Double {
    guard let slab = cu_stack_slab_new(64 * 1024, 64 * 1024, 1),
      let fiber = cu_stack_slab_fiber(slab, 0)
    else { fatalError("cu_stack_slab_new failed") }
    cu_fiber_prepare(
      fiber,
      { argument in
        let fiber = OpaquePointer(argument!)
        while true { cu_fiber_suspend(fiber) }
      }, UnsafeMutableRawPointer(fiber))
    // The fiber is left suspended: the process ends right after the figure.
    return bestNanoseconds(operations: count) {
      for _ in 0..<count { cu_fiber_resume(fiber, nil) }
    }
  }

  /// Resume + suspend through the public API: a coroutine awaits a callback that its loop
  /// completes, so each round trip is one suspension, one loop job and one resumption.
  static func loopRoundTrip(_ count: Int) throws -> Double {
    try CoroutineLoop.run {
      let loop = CoroutineLoop.current!
      return try bestNanoseconds(operations: count) {
        for _ in 0..<count {
          let _: Void = try co_await { done in loop.schedule { done(.success(())) } }
        }
      }
    }
  }

  /// The cheapest public round trip: `co_delay(0)` queues the coroutine behind the loop's
  /// ready jobs and switches out, with no timer, no callback and no allocation.
  static func delayZeroRoundTrip(_ count: Int) throws -> Double {
    try CoroutineLoop.run {
      try bestNanoseconds(operations: count) {
        for _ in 0..<count { try co_delay(0) }
      }
    }
  }

  /// The public-API round trip of a coroutine on a shared stack that nobody else uses: it stays
  /// the stack's occupant, so no bytes are copied.
  static func sharedLoopRoundTrip(_ count: Int) throws -> Double {
    try CoroutineLoop.run {
      let loop = CoroutineLoop.current!
      return try co_launch(stack: .shared) {
        try bestNanoseconds(operations: count) {
          for _ in 0..<count {
            let _: Void = try co_await { done in loop.schedule { done(.success(())) } }
          }
        }
      }.await()
    }
  }

  /// Two coroutines on the same shared stack taking turns: every resumption copies one out and
  /// the other in. Nanoseconds per resumption.
  static func sharedAlternation(_ count: Int) throws -> Double {
    try CoroutineLoop.run {
      let loop = CoroutineLoop.current!
      // Stacks are handed out round robin: the first and the last of these share one.
      var tasks: [CoTask<Double>] = []
      for index in 0...4 {
        tasks.append(
          co_launch(stackSize: 80 * 1024, stack: .shared) { () -> Double in
            guard index == 0 || index == 4 else { return 0 }
            return try bestNanoseconds(operations: 2 * count) {
              for _ in 0..<count {
                let _: Void = try co_await { done in loop.schedule { done(.success(())) } }
              }
            }
          })
      }
      return try tasks[0].await()
    }
  }

  /// An inline generator's `next()`: one resume of the producer and one suspension at its
  /// `yield`, with no scheduler in between — the plainest round trip the public API has.
  static func generatorNext(_ count: Int) -> Double {
    bestNanoseconds(operations: count) {
      let numbers = co_sequence { (yield: CoYield<Int>) in
        for index in 0..<count { try yield(index) }
      }
      var sum = 0
      for value in numbers { sum &+= value }
      precondition(sum == count * (count - 1) / 2)
    }
  }

  /// Two coroutines passing a value back and forth through two rendezvous channels, both on
  /// one loop (`acrossThreads == false`) or the second on a serial dispatch queue. Nanoseconds
  /// per round trip.
  static func channelPingPong(_ count: Int, acrossThreads: Bool) throws -> Double {
    try CoroutineLoop.run {
      try bestNanoseconds(operations: count) {
        let pings = CoChannel<Int>()
        let pongs = CoChannel<Int>()
        let other: (any CoroutineScheduler)? =
          acrossThreads ? DispatchQueue(label: "bench.pong") : nil
        let responder = co_launch(on: other) {
          for value in pings { try pongs.send(value) }
        }
        for index in 0..<count {
          try pings.send(index)
          let echoed = try pongs.receive()
          precondition(echoed == index)
        }
        pings.close()
        try responder.await()
      }
    }
  }

  /// Launching `count` coroutines at once on a loop and running each to completion.
  static func spawnAndComplete(_ count: Int) throws -> Double {
    try bestNanoseconds(operations: count, repetitions: 1) {
      try CoroutineLoop.run {
        for _ in 0..<count { co_launch {} }
      }
    }
  }

  /// A launch burst: `count` coroutines on one loop, each counting once, timed from the first
  /// launch to the last coroutine's end; nanoseconds per coroutine, one run (a fresh process
  /// each time, as Go's baseline in Benchmarks/Go/seed.go).
  static func launchBurst(_ count: Int) throws -> Double {
    let counter = Counter()
    let nanoseconds = try bestNanoseconds(operations: count, repetitions: 1) {
      try CoroutineLoop.run {
        for _ in 0..<count { co_launch { counter.count.add(1, ordering: .relaxed) } }
      }
    }
    precondition(counter.count.load(ordering: .relaxed) == count)
    return nanoseconds
  }

  /// What the coroutines of a launch burst count on.
  final class Counter: Sendable {
    let count = Atomic<Int>(0)
  }

  /// Seconds to list `count` parked coroutines (no frames), then to make
  /// `CoroutineDiagnostics.dump()` of them (frames and all), and the dump's size in bytes: the
  /// coroutines wait for one promise from a few nested functions, as a server's would.
  static func dumpOfParked(_ count: Int) throws -> [Double] {
    try CoroutineLoop.run {
      let gate = CoPromise<Void>()
      for index in 0..<count {
        co_launch(name: "parked \(index)") { try parkNested(depth: index % 4, on: gate) }
      }
      try co_delay(0)  // every one has parked
      let clock = ContinuousClock()
      var started = clock.now
      let listed = CoroutineDiagnostics.liveCoroutines().count  // with frames
      let listing = clock.now - started
      started = clock.now
      let dump = CoroutineDiagnostics.dump()
      let dumping = clock.now - started
      precondition(listed > count)
      gate.fulfill(())
      return [seconds(listing), seconds(dumping), Double(dump.utf8.count)]
    }
  }

  private static func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
  }

  @inline(never)
  private static func parkNested(depth: Int, on gate: CoPromise<Void>) throws {
    if depth == 0 { return try co_await(gate) }
    try parkNested(depth: depth - 1, on: gate)
  }

  /// A coroutine awaiting a promise that another thread fulfills, one after another.
  static func promiseAcrossThreads(_ count: Int, mailbox: Mailbox) throws -> Double {
    try CoroutineLoop.run {
      try bestNanoseconds(operations: count) {
        for index in 0..<count {
          let promise = CoPromise<Int>()
          mailbox.post { promise.fulfill(index) }
          let value = try co_await(promise)
          precondition(value == index)
        }
      }
    }
  }

  /// Resident memory added per coroutine parked on a promise, on dedicated or shared stacks:
  /// everything a user pays for (stack pages touched, fiber, coroutine, task). Returns the bytes
  /// per parked coroutine, how many parked, and how many could not start.
  static func residentMemoryPerParked(_ count: Int, stack: CoroutineStack.Mode) throws -> (
    bytes: Double, parked: Int, failed: Int
  ) {
    try CoroutineLoop.run {
      let loop = CoroutineLoop.current!
      let gate = CoPromise<Void>()
      var tasks: [CoTask<Void>] = []
      tasks.reserveCapacity(count)
      let before = residentBytes()
      for _ in 0..<count { tasks.append(co_launch(stack: stack) { try co_await(gate) }) }
      // The launches were queued before this resumption, so every coroutine has started and
      // parked (or failed to get a stack) by the time it comes back.
      let _: Void = try co_await { done in loop.schedule { done(.success(())) } }
      let after = residentBytes()
      // Reading `result` observes the rejections, so none is reported as unhandled.
      let failed = tasks.filter { $0.result != nil }.count
      gate.fulfill(())
      let parked = count - failed
      return (Double(after - before) / Double(max(parked, 1)), parked, failed)
    }
  }

  /// The process's resident set, from /proc/self/statm.
  static func residentBytes() -> Int {
    let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
    let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(cu_page_size())
  }
}
