import CSwitchProbe
import Foundation
import Testing

@testable import Coroutines

extension CoroutineBackend {
  /// Runs the switch probe on this backend on a private context, leaving the backend in use
  /// alone: a context made by `makecontext` must start and receive its arguments, and each side
  /// of a switch must get back its own callee-saved registers and rounding mode.
  func selfCheck() -> Int32 { cu_backend_probe(shimValue) }
}

@Suite struct BackendTests {
  @Test(arguments: CoroutineBackend.allCases.filter(\.isAvailable))
  func eachBackendStartsAMadeContextAndKeepsEachSidesState(backend: CoroutineBackend) {
    #expect(backend.selfCheck() == Int32(CU_PROBE_PASSED))
  }

  @Test func aBackendThisMachineLacksIsReportedUnavailable() {
    #expect(cu_backend_probe(7) == Int32(CU_PROBE_UNAVAILABLE))
    #if !arch(x86_64)
      #expect(CoroutineBackend.fast.selfCheck() == Int32(CU_PROBE_UNAVAILABLE))
    #endif
  }

  /// `make test` runs the suite once per backend; this holds it to what it claims to test.
  @Test func theEnvironmentVariableChoosesTheBackend() {
    let requested = ProcessInfo.processInfo.environment[CoroutineBackend.environmentVariable]
    let expected: CoroutineBackend
    switch requested?.lowercased() {
    case "ucontext": expected = .ucontext
    default: expected = CoroutineBackend.fast.isAvailable ? .fast : .ucontext
    }
    #expect(CoroutineBackend.current == expected)
  }

  /// A coroutine suspended and resumed many times through the public API, with state on its
  /// stack that each round trip must carry over intact, on whichever backend this run uses.
  @Test func aCoroutineRoundTripsOnTheCurrentBackend() throws {
    let rounds = 1000
    let (sum, checksum) = try CoroutineLoop.run { () -> (Int, Double) in
      let loop = try #require(CoroutineLoop.current)
      var sum = 0
      var checksum = 1.0
      for round in 1...rounds {
        let echoed: Int = try co_await { done in loop.schedule { done(.success(round)) } }
        sum += echoed
        checksum = checksum * 1.000_001 + Double(echoed)
      }
      return (sum, checksum)
    }
    var expectedChecksum = 1.0
    for round in 1...rounds { expectedChecksum = expectedChecksum * 1.000_001 + Double(round) }
    #expect(sum == rounds * (rounds + 1) / 2)
    #expect(checksum == expectedChecksum)
  }

  /// Each side keeps its own rounding mode: a mode set inside a coroutine does not leak to the
  /// thread that resumes it, and survives the coroutine's suspensions.
  @Test func aCoroutinesRoundingModeStaysWithIt() throws {
    let modes = try CoroutineLoop.run { () -> [Int32] in
      let loop = try #require(CoroutineLoop.current)
      let inner = co_launch(on: loop) { () -> [Int32] in
        fesetround(FE_UPWARD)
        defer { fesetround(FE_TONEAREST) }
        var seen: [Int32] = []
        for _ in 0..<3 {
          let _: Void = try co_await { done in loop.schedule { done(.success(())) } }
          seen.append(fegetround())
        }
        return seen
      }
      var outside: [Int32] = []
      for _ in 0..<3 {
        let _: Void = try co_await { done in loop.schedule { done(.success(())) } }
        outside.append(fegetround())
      }
      return try inner.await() + outside
    }
    #expect(modes == [FE_UPWARD, FE_UPWARD, FE_UPWARD, FE_TONEAREST, FE_TONEAREST, FE_TONEAREST])
  }
}
