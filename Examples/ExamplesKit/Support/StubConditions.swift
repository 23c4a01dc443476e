/// How a stubbed device behaves: how long it takes and how often it fails.
///
/// Every outcome is a pure function of the seed and the request's key, so two runs that ask
/// for the same things see the same latencies and the same failures, whatever order they ask
/// in. That is what lets a walkthrough compare its callback and coroutine versions.
public struct StubConditions: Sendable, Equatable {
  /// The range each request's latency is drawn from, in seconds.
  public var latency: ClosedRange<Double>
  /// The share of requests that fail, from 0 to 1.
  public var failureRate: Double
  /// Changes every latency and failure at once.
  public var seed: UInt64

  /// Conditions for a device; the defaults look like a phone on a decent network.
  public init(
    latency: ClosedRange<Double> = 0.005...0.040, failureRate: Double = 0.1, seed: UInt64 = 7
  ) {
    precondition(
      (0...1).contains(failureRate), "StubConditions: failureRate \(failureRate) is not in 0...1")
    precondition(latency.lowerBound >= 0, "StubConditions: latency \(latency) is negative")
    self.latency = latency
    self.failureRate = failureRate
    self.seed = seed
  }

  /// The latency and fate of the request named `key`.
  public func outcome(for key: String) -> (latency: Double, fails: Bool) {
    var state = seed ^ fnv1a(key)
    let first = unitInterval(splitMix(&state))
    let second = unitInterval(splitMix(&state))
    let latency =
      self.latency.lowerBound + first * (self.latency.upperBound - self.latency.lowerBound)
    return (latency, second < failureRate)
  }
}

private func fnv1a(_ key: String) -> UInt64 {
  var hash: UInt64 = 0xcbf2_9ce4_8422_2325
  for byte in key.utf8 {
    hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
  }
  return hash
}

private func splitMix(_ state: inout UInt64) -> UInt64 {
  state &+= 0x9e37_79b9_7f4a_7c15
  var z = state
  z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
  z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
  return z ^ (z >> 31)
}

private func unitInterval(_ bits: UInt64) -> Double {
  Double(bits >> 11) / Double(1 << 53)
}
