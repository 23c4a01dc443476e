import Testing

@testable import Coroutines

/// Misuse of the coroutine locks stops the process with a message naming the call and the
/// value (checked in child processes: Swift Testing exit tests).
@Suite struct SyncBadInputTests {
  static let misuses = [
    BadInputTests.Misuse(
      role: "unlockByNonHolder",
      message: "CoMutex.unlock(): coroutine 'intruder' does not hold the mutex"),
    BadInputTests.Misuse(
      role: "unlockUnlocked", message: "CoMutex.unlock(): the mutex is not locked"),
    BadInputTests.Misuse(
      role: "doneTooOften",
      message:
        "CoWaitGroup.done(): called with the count at 0: more done() calls than add(_:) counted"),
    BadInputTests.Misuse(
      role: "addBelowZero",
      message: "CoWaitGroup.add(_:): adding -3 to the count 2 would make it negative"),
    BadInputTests.Misuse(
      role: "negativeSemaphore", message: "CoSemaphore(value:): the value -1 is negative"),
    BadInputTests.Misuse(
      role: "signalPastIntMax",
      message:
        "CoSemaphore.signal(): 9223372036854775807 permits plus 1 would pass Int.max (9223372036854775807)"
    ),
  ]

  @Test(arguments: misuses)
  func aMisuseStopsWithAMessageNamingTheCallAndValue(_ misuse: BadInputTests.Misuse)
    async throws
  {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) { [misuse] in
      try Self.commit(misuse.role)
    }
    let output = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(output.contains(misuse.message), "\(output)")
  }

  /// Commits the misuse named `role`; returns only if it failed to stop the process.
  static func commit(_ role: String) throws {
    switch role {
    case "unlockByNonHolder":
      try CoroutineLoop.run {
        let mutex = CoMutex()
        try mutex.lock()
        try co_await(co_launch(name: "intruder") { mutex.unlock() })
      }
    case "unlockUnlocked": CoMutex().unlock()
    case "doneTooOften": CoWaitGroup().done()
    case "addBelowZero":
      let group = CoWaitGroup()
      group.add(2)
      group.add(-3)
    case "negativeSemaphore": _ = CoSemaphore(value: -1)
    case "signalPastIntMax": CoSemaphore(value: Int.max).signal()
    default: break
    }
  }
}
