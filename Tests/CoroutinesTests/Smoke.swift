import Testing

@testable import Coroutines

@Test func smoke() throws {
  let value = try CoroutineLoop.run { () -> Int in
    try co_delay(0.001)
    return 7
  }
  #expect(value == 7)
}
