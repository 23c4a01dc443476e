import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

@Suite struct GeneratorMisuseTests {
  @Test func anInlineBodyAskingItsOwnGeneratorStopsWithAMessage() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      let holder = Mutex<CoGenerator<Int>?>(nil)
      let numbers = co_sequence { (yield: CoYield<Int>) in
        _ = holder.withLock { $0 }?.next()
        try yield(1)
      }
      holder.withLock { $0 = numbers }
      _ = numbers.next()
    }
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("this inline generator is already being driven"))
  }

  @Test func blockingOnTheProducersOwnLoopStopsWithAMessage() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      let loop = CoroutineLoop()
      let numbers = co_sequence(on: loop) { (yield: CoYield<Int>) in try yield(1) }
      loop.schedule { _ = numbers.next() }
      loop.run()
    }
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("waiting here would stop the producer from ever running"))
  }

  @Test func aScheduledBodyAskingItsOwnGeneratorStopsWithAMessage() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      let holder = Mutex<CoGenerator<Int>?>(nil)
      let queue = DispatchQueue(label: "generator.self")
      let numbers = co_sequence(on: queue) { (yield: CoYield<Int>) in
        _ = holder.withLock { $0 }?.next()
        try yield(1)
      }
      holder.withLock { $0 = numbers }
      _ = numbers.next()
    }
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("called from the generator's own body"))
  }
}
