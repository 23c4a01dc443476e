import Dispatch
import Synchronization

/// A device that answers every request after a fixed latency, from a background queue: the
/// "I/O" both sides of the experiment wait for. A thread waits for it by blocking; a coroutine
/// by suspending.
final class SimulatedDevice: Sendable {
  private let latency: Double
  private let requests = Atomic<Int>(0)

  /// A device that takes `latency` seconds per request.
  init(latency: Double) { self.latency = latency }

  /// Requests served so far.
  var requestCount: Int { requests.load(ordering: .relaxed) }

  /// Calls `completion` once the request is done, on a background queue.
  func request(_ completion: @escaping @Sendable () -> Void) {
    requests.add(1, ordering: .relaxed)
    DispatchQueue.global().asyncAfter(deadline: .now() + latency) {
      completion()
    }
  }

  /// Blocks the calling thread until a request is done: what blocking I/O does to a thread.
  func blockingRequest() {
    let done = DispatchSemaphore(value: 0)
    request { done.signal() }
    done.wait()
  }
}
