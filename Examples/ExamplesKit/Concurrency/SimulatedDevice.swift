import Coroutines
import Dispatch
import Synchronization

/// A device that answers every request after a fixed latency: the "I/O" both sides of the
/// experiment wait for. A thread waits for it by blocking; a coroutine by suspending.
///
/// A coroutine waits with `awaitRequest()`, which its loop's timers answer directly. A request
/// made on a loop's thread with a completion is answered by a timer of that loop, so the
/// completion runs on the loop, as a real device's readiness reaches a loop through its poller.
/// A request made elsewhere (a blocked thread's) is answered from a background queue.
final class SimulatedDevice: Sendable {
  private let latency: Double
  private let requests = Atomic<Int>(0)

  /// A device that takes `latency` seconds per request.
  init(latency: Double) { self.latency = latency }

  /// Requests served so far.
  var requestCount: Int { requests.load(ordering: .relaxed) }

  /// Calls `completion` once the request is done: on the calling thread's loop if it runs one,
  /// else on a background queue.
  func request(_ completion: @escaping @Sendable () -> Void) {
    requests.add(1, ordering: .relaxed)
    if let loop = CoroutineLoop.current {
      _ = loop.schedule(after: latency, completion)
    } else {
      DispatchQueue.global().asyncAfter(deadline: .now() + latency, execute: completion)
    }
  }

  /// Suspends the calling coroutine until a request is done.
  ///
  /// The answer is the latency slept in the coroutine's loop's timers (`co_delay`): the loop
  /// wakes the coroutine itself when it is due, as a loop's poller wakes a coroutine whose
  /// descriptor is ready. Going through `request` instead costs each wait a timer object and
  /// its closures, and a hop: the loop runs the timer's job, which then wakes the coroutine.
  func awaitRequest() throws {
    requests.add(1, ordering: .relaxed)
    try co_delay(latency)
  }

  /// Blocks the calling thread until a request is done: what blocking I/O does to a thread.
  func blockingRequest() {
    let done = DispatchSemaphore(value: 0)
    request { done.signal() }
    done.wait()
  }
}
