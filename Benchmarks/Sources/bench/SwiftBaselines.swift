/// Swift Concurrency doing the same jobs as the coroutine figures, measured in the same run.
enum SwiftBaselines {
  /// One task suspending and being resumed by its executor: `await Task.yield()`.
  static func taskYield(_ count: Int) -> Double {
    blockingAwait {
      await bestNanoseconds(operations: count) {
        for _ in 0..<count { await Task.yield() }
      }
    }
  }

  /// A task awaiting a continuation that another thread resumes, one after another.
  static func continuationAcrossThreads(_ count: Int, mailbox: Mailbox) -> Double {
    blockingAwait {
      await bestNanoseconds(operations: count) {
        for index in 0..<count {
          let value = await withUnsafeContinuation {
            (continuation: UnsafeContinuation<Int, Never>) in
            mailbox.post { continuation.resume(returning: index) }
          }
          precondition(value == index)
        }
      }
    }
  }

  /// Spawning and completing child tasks in a task group.
  static func taskGroupChildren(_ count: Int) -> Double {
    blockingAwait {
      await bestNanoseconds(operations: count) {
        await withTaskGroup(of: Void.self) { group in
          for _ in 0..<count { group.addTask {} }
        }
      }
    }
  }

  /// Two tasks passing a value back and forth through two AsyncStreams.
  static func asyncStreamPingPong(_ count: Int) -> Double {
    blockingAwait {
      await bestNanoseconds(operations: count) {
        let (pings, ping) = AsyncStream<Int>.makeStream()
        let (pongs, pong) = AsyncStream<Int>.makeStream()
        let responder = Task {
          for await value in pings { pong.yield(value) }
          pong.finish()
        }
        var iterator = pongs.makeAsyncIterator()
        for index in 0..<count {
          ping.yield(index)
          let echoed = await iterator.next()
          precondition(echoed == index)
        }
        ping.finish()
        await responder.value
      }
    }
  }
}
