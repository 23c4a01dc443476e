// Each case runs its loop `rounds` times and prints the fastest round, in nanoseconds per
// iteration. Coroutine cases run inside CoroutineLoop.run, async cases inside one Task.
// Pick the backend with COROUTINES_BACKEND=fast|ucontext.

import Coroutines
import Dispatch
import Foundation

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

@inline(never) func trivial(_ x: Int) async throws -> Int { x &+ 1 }

func report(_ label: String, _ best: UInt64, _ n: Int) {
  let padded = label.padding(toLength: 62, withPad: " ", startingAt: 0)
  print(padded, String(format: "%8.0f ns", Double(best) / Double(n)))
}

func measure(_ label: String, n: Int, rounds: Int = 5, _ body: (Int) throws -> Void) rethrows {
  var best = UInt64.max
  for _ in 0..<rounds {
    let start = now()
    try body(n)
    best = min(best, now() - start)
  }
  report(label, best, n)
}

func measureAsync(
  _ label: String, n: Int, rounds: Int = 5, _ body: @escaping @Sendable (Int) async throws -> Void
) {
  let done = DispatchSemaphore(value: 0)
  Task {
    var best = UInt64.max
    for _ in 0..<rounds {
      let start = now()
      try await body(n)
      best = min(best, now() - start)
    }
    report(label, best, n)
    done.signal()
  }
  done.wait()
}

try measure("coroutine: co_await(promise) fulfilled by a coroutine", n: 100_000) { n in
  try CoroutineLoop.run {
    var ping = CoPromise<Int>()
    var pong = CoPromise<Int>()
    let other = co_launch(detached: true) { () -> Void in
      for i in 0..<n {
        _ = try co_await(ping)
        let answer = pong
        ping = CoPromise<Int>()
        pong = CoPromise<Int>()
        answer.fulfill(i)
      }
    }
    for i in 0..<n {
      let (question, answer) = (ping, pong)
      question.fulfill(i)
      _ = try co_await(answer)
    }
    try co_await(other)
  }
}

try measure("coroutine: co_await(settled future)", n: 1_000_000) { n in
  try CoroutineLoop.run {
    let future = CoPromise<Int>()
    future.fulfill(1)
    var sum = 0
    for _ in 0..<n { sum &+= try co_await(future) }
    precondition(sum == n)
  }
}

try measure("future: settled.map { $0 + 1 }", n: 1_000_000) { n in
  let future = CoPromise<Int>()
  future.fulfill(1)
  var sum = 0
  for _ in 0..<n {
    if case .success(let value)? = future.map({ $0 + 1 }).result { sum &+= value }
  }
  precondition(sum == 2 * n)
}

try measure("coroutine -> async: co_await { try await f() }", n: 20_000) { n in
  try CoroutineLoop.run {
    var sum = 0
    for i in 0..<n { sum &+= try co_await { try await trivial(i) } }
    precondition(sum > 0)
  }
}

try measure("coroutine: co_await(co_launch { x })", n: 100_000) { n in
  try CoroutineLoop.run {
    var sum = 0
    for i in 0..<n { sum &+= try co_await(co_launch { i }) }
    precondition(sum > 0)
  }
}

let queue = DispatchQueue(label: "coroutines")
measureAsync("async -> coroutine: try await co_launch(on: queue) { x }.value", n: 20_000) { n in
  var sum = 0
  for i in 0..<n { sum &+= try await co_launch(on: queue) { i }.value }
  precondition(sum > 0)
}

measureAsync("async: try await settledFuture.value", n: 100_000) { n in
  let future = CoPromise<Int>()
  future.fulfill(1)
  var sum = 0
  for _ in 0..<n { sum &+= try await future.value }
  precondition(sum == n)
}

measureAsync("async: try await f() (no suspension)", n: 1_000_000) { n in
  var sum = 0
  for i in 0..<n { sum &+= try await trivial(i) }
  precondition(sum > 0)
}

measureAsync("async: try await Task { try await f() }.value", n: 100_000) { n in
  var sum = 0
  for i in 0..<n { sum &+= try await Task { try await trivial(i) }.value }
  precondition(sum > 0)
}
