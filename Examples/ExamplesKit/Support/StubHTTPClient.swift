import Dispatch
import Foundation
import Synchronization

/// Why a stubbed request failed.
public enum StubError: Error, Equatable, CustomStringConvertible {
  /// The request to `url` timed out (the failure the stub injects).
  case timedOut(url: String)
  /// Nothing is served at `url`.
  case notFound(url: String)

  /// Says what failed and where.
  public var description: String {
    switch self {
    case .timedOut(let url): "request to \(url) timed out"
    case .notFound(let url): "nothing at \(url) (404)"
    }
  }
}

/// An HTTP client that never touches the network: it answers from `routes` after the latency
/// its conditions give the URL, on a background queue, the way `URLSession` calls back.
///
/// Waiting is a `DispatchQueue.asyncAfter`, so no thread sleeps while a request is in flight.
public final class StubHTTPClient: Sendable {
  /// Latency and failure rate of every request.
  public let conditions: StubConditions
  private let routes: @Sendable (String) -> Data?
  private let callbackQueue: DispatchQueue
  private let requests = Atomic<Int>(0)

  /// A client that serves `routes(url)` (nil: 404) under `conditions`, calling back on
  /// `callbackQueue` (a concurrent background queue by default).
  public init(
    conditions: StubConditions = StubConditions(),
    callbackQueue: DispatchQueue = .global(qos: .utility),
    routes: @escaping @Sendable (String) -> Data?
  ) {
    self.conditions = conditions
    self.callbackQueue = callbackQueue
    self.routes = routes
  }

  /// How many requests have been made.
  public var requestCount: Int { requests.load(ordering: .relaxed) }

  /// Fetches `url` and calls `completion` once, on the callback queue, with the body or an
  /// error.
  public func get(_ url: String, completion: @escaping @Sendable (Result<Data, any Error>) -> Void)
  {
    requests.add(1, ordering: .relaxed)
    let (latency, fails) = conditions.outcome(for: url)
    let routes = self.routes
    callbackQueue.asyncAfter(deadline: .now() + latency) {
      if fails { return completion(.failure(StubError.timedOut(url: url))) }
      guard let body = routes(url) else {
        return completion(.failure(StubError.notFound(url: url)))
      }
      completion(.success(body))
    }
  }
}
