import Dispatch
import Testing

@testable import Coroutines

/// Every sample of Docs/Coroutines.docc/Articles/Synchronization.md and of the doc comments of
/// Sources/Coroutines/Sync, verbatim between the markers, with the checks its comments promise.
@Suite struct SynchronizationArticleTests {
  static let sources = [
    "CoMutex", "CoSemaphore", "CoRWLock", "CoCondition", "CoWaitGroup", "CoLocal",
  ]

  @Test func everyArticleSampleIsTested() throws {
    try ModelsDocSampleTests.expectTested(
      try ModelsDocSampleTests.samples(in: "Synchronization"), from: "Synchronization.md")
  }

  @Test(arguments: sources)
  func everyDocCommentSampleIsTested(source: String) throws {
    let url = ModelsDocSampleTests.root.appendingPathComponent(
      "Sources/Coroutines/Sync/\(source).swift")
    let comments = try String(contentsOf: url, encoding: .utf8)
      .split(separator: "\n", omittingEmptySubsequences: false)
      .map { $0.drop(while: { $0 == " " }) }
      .filter { $0.hasPrefix("///") }
      .map { $0.hasPrefix("/// ") ? $0.dropFirst(4) : $0.dropFirst(3) }
    try ModelsDocSampleTests.expectTested(
      ModelsDocSampleTests.samples(inMarkdown: comments.joined(separator: "\n")),
      from: "\(source).swift")
  }

  @Test func aMutex() throws {
    // sample
    let mutex = CoMutex()
    nonisolated(unsafe) var balance = 0  // every access holds mutex
    try CoroutineLoop.run {
      for _ in 0..<10 {
        co_launch(on: DispatchQueue.global()) {
          try mutex.withLock { balance += 10 }
        }
      }
    }
    // balance == 100
    // end
    #expect(balance == 100)
  }

  @Test func aTimeout() throws {
    // sample
    let cache = CoMutex()
    let refreshed = try CoroutineLoop.run { () -> Bool in
      co_launch { try cache.withLock { try co_delay(1) } }  // holds it for a second
      try co_delay(0)
      do {
        try cache.lock(timeout: 0.05)
        defer { cache.unlock() }
        return true
      } catch CoroutineError.timedOut {
        return false  // carry on without the cache
      }
    }
    // refreshed == false
    // end
    #expect(refreshed == false)
  }

  @Test func aSemaphore() throws {
    // sample
    let downloads = CoSemaphore(value: 2)  // two at a time
    let pages = try CoroutineLoop.run { () -> [Int] in
      let tasks = (1...5).map { page in
        co_launch { () -> Int in
          try downloads.withPermit {
            try co_delay(0.01)  // the download
            return page
          }
        }
      }
      return try tasks.map { try co_await($0) }
    }
    // pages == [1, 2, 3, 4, 5]
    // end
    #expect(pages == [1, 2, 3, 4, 5])
    #expect(downloads.available == 2)
  }

  @Test func aReadersWriterLock() throws {
    // sample
    final class Settings: @unchecked Sendable {  // `values` only under `lock`
      let lock = CoRWLock()
      var values = ["theme": "dark"]
    }

    let settings = Settings()
    try CoroutineLoop.run {
      co_launch { try settings.lock.withWriteLock { settings.values["theme"] = "light" } }
      co_launch { _ = try settings.lock.withReadLock { settings.values["theme"] } }
    }
    // end
    #expect(settings.values == ["theme": "light"])
  }

  @Test func aCondition() throws {
    // sample
    final class WorkQueue: @unchecked Sendable {  // `items` only under `mutex`
      let mutex = CoMutex()
      let nonEmpty = CoCondition()
      var items: [Int] = []
    }

    let queue = WorkQueue()
    let taken = try CoroutineLoop.run { () -> Int in
      let consumer = co_launch { () -> Int in
        try queue.mutex.withLock {
          while queue.items.isEmpty { try queue.nonEmpty.wait(queue.mutex) }
          return queue.items.removeFirst()
        }
      }
      try queue.mutex.withLock { queue.items.append(42) }
      queue.nonEmpty.signal()
      return try co_await(consumer)
    }
    // taken == 42
    // end
    #expect(taken == 42)
    #expect(queue.items.isEmpty)
  }

  @Test func aWaitGroup() throws {
    // sample
    let group = CoWaitGroup()
    let finished = try CoroutineLoop.run { () -> Bool in
      for delay in [0.03, 0.01, 0.02] {
        group.add()
        co_launch(on: DispatchQueue.global()) {
          defer { group.done() }
          try co_delay(delay)
        }
      }
      try group.wait()  // all three are done
      return true
    }
    // end
    #expect(finished)
    #expect(group.count == 0)
  }

  @Test func coroutineLocals() throws {
    // sample
    let requestID = CoLocal(default: "none")
    let seen = try CoroutineLoop.run { () -> [String] in
      try requestID.withValue("r-42") {
        let child = co_launch { requestID.value }  // inherited: "r-42"
        try co_delay(0.01)  // still "r-42" after the suspension
        return [requestID.value, try co_await(child)]
      }
    }
    // seen == ["r-42", "r-42"]
    // end
    #expect(seen == ["r-42", "r-42"])
  }
}
