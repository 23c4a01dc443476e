/// How long ``CoFuture/retry(_:backoff:on:_:)`` waits before each new attempt: always the same,
/// or growing after each failure up to a maximum, with some randomness (jitter) so that many
/// clients failing together do not all retry at the same moment.
///
/// ```swift
/// let backoff = CoBackoff.exponential(initial: 0.1, maximum: 5, jitter: 0.5)
/// let page = CoFuture.retry(6, backoff: backoff) { fetchPage(url) }
/// ```
public struct CoBackoff: Sendable, Equatable {
  /// The wait after the first failure, in seconds.
  public let initial: Double
  /// What each later wait is multiplied by: 1 keeps it constant.
  public let multiplier: Double
  /// The longest wait, in seconds, however many failures came before.
  public let maximum: Double
  /// The share of each wait, from 0 to 1, that is drawn at random: a wait of `d` becomes a
  /// number between `d * (1 - jitter)` and `d`.
  public let jitter: Double

  /// No wait: each attempt starts as soon as the previous one failed.
  public static let none = CoBackoff.constant(0)

  /// The same wait before every new attempt.
  ///
  /// - Parameter seconds: The wait; negative counts as zero, NaN stops with a message.
  public static func constant(_ seconds: Double) -> CoBackoff {
    coPrecondition(!seconds.isNaN, "CoBackoff.constant(_:): the delay is NaN")
    return CoBackoff(initial: seconds, multiplier: 1, maximum: seconds, jitter: 0)
  }

  /// A wait that starts at `initial` and is multiplied by `multiplier` after each failure, up
  /// to `maximum`, with a `jitter` share of it drawn at random.
  ///
  /// - Parameters:
  ///   - initial: The wait after the first failure, in seconds; 0 or more.
  ///   - multiplier: 1 or more (2 doubles the wait each time).
  ///   - maximum: The longest wait, in seconds; `initial` or more.
  ///   - jitter: From 0 (none) to 1 (anything from zero to the full wait).
  ///
  /// A value outside those ranges, or NaN, stops with a message naming it.
  public static func exponential(
    initial: Double, multiplier: Double = 2, maximum: Double = .infinity, jitter: Double = 0
  ) -> CoBackoff {
    coPrecondition(
      initial >= 0, "CoBackoff.exponential: initial is \(initial), must be 0 or more")
    coPrecondition(
      multiplier >= 1, "CoBackoff.exponential: multiplier is \(multiplier), must be 1 or more")
    coPrecondition(
      maximum >= initial,
      "CoBackoff.exponential: maximum is \(maximum), must be at least initial (\(initial))")
    coPrecondition(
      (0...1).contains(jitter), "CoBackoff.exponential: jitter is \(jitter), must be in 0...1")
    return CoBackoff(initial: initial, multiplier: multiplier, maximum: maximum, jitter: jitter)
  }

  /// The wait in seconds after failure number `failure` (1 for the first), before jitter.
  public func baseDelay(afterFailure failure: Int) -> Double {
    var delay = max(initial, 0)
    var step = 1
    while step < failure, delay < maximum, multiplier > 1 {
      delay *= multiplier
      step += 1
    }
    return min(delay, maximum)
  }

  /// The wait in seconds after failure number `failure` (1 for the first), with its jitter
  /// drawn from `generator`.
  public func delay<Generator: RandomNumberGenerator>(
    afterFailure failure: Int, using generator: inout Generator
  ) -> Double {
    let base = baseDelay(afterFailure: failure)
    guard jitter > 0, base > 0 else { return base }
    return base - base * jitter * Double.random(in: 0...1, using: &generator)
  }

  /// The wait in seconds after failure number `failure` (1 for the first), with its jitter
  /// drawn from the system's generator.
  public func delay(afterFailure failure: Int) -> Double {
    var generator = SystemRandomNumberGenerator()
    return delay(afterFailure: failure, using: &generator)
  }

  /// True if some attempt may have to wait.
  var mayWait: Bool { initial > 0 }
}
