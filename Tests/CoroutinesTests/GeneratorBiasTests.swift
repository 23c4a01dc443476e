import CLinux
import CUContext
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// An inline generator is held by the thread that drove it first without locked instructions
/// (the bias, `cu_bias`); any other thread that drives it, wakes its producer or cancels it
/// closes the bias first, and from then on every call uses the locked protocol. These check
/// both protocols and the hand-over between them.
@Suite struct GeneratorBiasTests {
  @Test func aGeneratorDrivenFromOneThreadKeepsItsBias() {
    let numbers = counting()
    #expect(numbers.next() == 0)
    #expect(numbers.next() == 1)
    #expect(biasOwner(numbers) == ownerAfterDriving())
    numbers.cancel()
    #expect(numbers.isFinished)
    #expect(biasOwner(numbers) == ownerAfterDriving())
  }

  @Test func anotherThreadAskingClosesTheBiasAndTheSequenceGoesOn() {
    let numbers = counting()
    #expect(numbers.next() == 0)
    let fromOtherThread = onOtherThread { numbers.next() }
    #expect(fromOtherThread == 1)
    #expect(biasOwner(numbers) == CU_BIAS_CLOSED)
    #expect(numbers.next() == 2)
    #expect(numbers.next() == 3)
  }

  @Test func aWakeUpFromAnotherThreadClosesTheBias() {
    let other = DispatchQueue(label: "bias.waker")
    let driver = Mutex<InlineDriver?>(nil)
    let numbers = co_sequence { (yield: CoYield<Int>) in
      try yield(0)
      for n in 1...3 {
        let answer = CoPromise<Int>()
        other.async {
          // Only once the consumer waits is the producer surely parked, so that the promise
          // wakes it from this thread rather than settling before the await.
          while !(driver.withLock { $0 }!.isWaitingForJobs) { sched_yield() }
          answer.fulfill(n)
        }
        try yield(try co_await(answer))
      }
    }
    driver.withLock { $0 = numbers.inline!.takeUnretainedValue().driver }
    #expect(numbers.next() == 0)
    #expect(biasOwner(numbers) == ownerAfterDriving())
    #expect(numbers.next() == 1)
    #expect(biasOwner(numbers) == CU_BIAS_CLOSED)
    #expect(Array(numbers) == [2, 3])
  }

  @Test func droppingAGeneratorOnAnotherThreadUnwindsItsBody() {
    let unwound = ModelsCounter()
    var numbers: CoGenerator<Int>? = counting(unwound: unwound)
    #expect(numbers?.next() == 0)
    let handed = Mutex<CoGenerator<Int>?>(numbers.take())
    onOtherThread { _ = handed.withLock { $0.take() } }
    #expect(unwound.value == 1)
  }

  @Test(arguments: [false, true])
  func cancelFromAnotherThreadEndsTheSequenceWhateverItMeets(refusingClaims: Bool) {
    // Each round cancels at a different point of the consumer's loop; whichever side sees the
    // other, the body unwinds exactly once and the consumer's loop ends.
    cu_bias_refuse_claims(refusingClaims ? 1 : 0)
    defer { cu_bias_refuse_claims(0) }
    for round in 0..<200 {
      let unwound = ModelsCounter()
      let taken = Atomic<Int>(0)
      let numbers = counting(unwound: unwound)
      let canceller = Thread {
        while taken.load(ordering: .acquiring) < round % 7 + 1 {}
        numbers.cancel()
      }
      canceller.start()
      var expected = 0
      while let value = numbers.next() {
        #expect(value == expected)
        expected += 1
        taken.store(expected, ordering: .releasing)
      }
      #expect(numbers.isFinished)
      #expect(unwound.value == 1)
      while !canceller.isFinished { sched_yield() }
    }
  }

  @Test func withClaimsRefusedTheLockedProtocolServesEverything() {
    cu_bias_refuse_claims(1)
    defer { cu_bias_refuse_claims(0) }
    let other = DispatchQueue(label: "bias.refused")
    let unwound = ModelsCounter()
    let numbers = co_sequence { (yield: CoYield<Int>) in
      defer { unwound.increment() }
      for n in 0... {
        let answer = CoPromise<Int>()
        other.async { answer.fulfill(n) }
        try yield(try co_await(answer))
      }
    }
    #expect(numbers.next() == 0)
    #expect(numbers.next() == 1)
    #expect(biasOwner(numbers) == CU_BIAS_CLOSED)
    numbers.cancel()
    #expect(unwound.value == 1)
    #expect(numbers.next() == nil)
  }

  @Test func anotherThreadAskingWhileTheOwnerIsInsideStopsWithAMessage() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      let inside = DispatchSemaphore(value: 0)
      let never = DispatchSemaphore(value: 0)
      let holder = Mutex<CoGenerator<Int>?>(nil)
      let numbers = co_sequence { (yield: CoYield<Int>) in
        inside.signal()
        never.wait()
        try yield(0)
      }
      holder.withLock { $0 = numbers }
      Thread {
        inside.wait()
        _ = holder.withLock { $0 }?.next()
      }.start()
      _ = numbers.next()
    }
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("this inline generator is already being driven"))
  }
}

/// 0, 1, 2, … for ever; `unwound` counts the body's unwinding.
private func counting(unwound: ModelsCounter? = nil) -> CoGenerator<Int> {
  co_sequence { (yield: CoYield<Int>) in
    defer { unwound?.increment() }
    for n in 0... { try yield(n) }
  }
}

/// Who holds a generator's bias after this thread alone drove it: this thread, or nobody
/// (closed) where biases are unavailable (under ThreadSanitizer, or without membarrier).
private func ownerAfterDriving() -> UInt {
  cu_bias_available() != 0 ? cu_tls_thread_token() : CU_BIAS_CLOSED
}

private func biasOwner(_ generator: CoGenerator<Int>) -> UInt {
  generator.inline!.takeUnretainedValue().driver.biasOwner
}

/// Runs `work` on a new thread and waits for its result.
@discardableResult
private func onOtherThread<R: Sendable>(_ work: @escaping @Sendable () -> R) -> R {
  let result = Mutex<R?>(nil)
  let done = DispatchSemaphore(value: 0)
  Thread {
    result.withLock { $0 = work() }
    done.signal()
  }.start()
  done.wait()
  return result.withLock { $0.take()! }
}
