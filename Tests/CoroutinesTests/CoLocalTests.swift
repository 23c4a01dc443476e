import Dispatch
import Foundation
import Testing

@testable import Coroutines

/// `CoLocal`: bound per coroutine, across suspensions and threads, nested, inherited by
/// children, and per thread outside coroutines.
@Suite struct CoLocalTests {
  static let request = CoLocal(default: "none")
  static let depth = CoLocal(default: 0)

  @Test func aBindingSurvivesSuspensionsAndMovesBetweenThreads() throws {
    let result = try CoroutineLoop.run { () -> (values: [String], threads: Int) in
      try co_await(
        co_launch(on: DispatchQueue.global()) { () -> ([String], Int) in
          try Self.request.withValue("moving") {
            var values: [String] = []
            var threads: Set<ObjectIdentifier> = [threadID()]
            for _ in 0..<200 {
              try co_delay(0)
              values.append(Self.request.value)
              threads.insert(threadID())
            }
            return (Array(Set(values)), threads.count)
          }
        })
    }
    #expect(result.values == ["moving"])
    #expect(Self.request.value == "none")
    // Whether the global queue moved it this time is up to Dispatch; `co_await(on:)` below
    // moves it for certain.
    #expect(result.threads >= 1)
  }

  @Test func aBindingHopsWithCoAwaitOn() throws {
    let values = try CoroutineLoop.run { () -> [String] in
      try Self.request.withValue("hop") {
        let there = try co_await(on: DispatchQueue(label: "CoLocalTests.hop")) {
          Self.request.value
        }
        return [there, Self.request.value]
      }
    }
    #expect(values == ["hop", "hop"])
  }

  @Test func otherCoroutinesOnTheSameThreadDoNotSeeIt() throws {
    let seen = try CoroutineLoop.run { () -> [String] in
      let other = co_launch(detached: true) { () -> String in
        try co_delay(0)  // runs while the first coroutine below is inside withValue
        return Self.request.value
      }
      return try Self.request.withValue("mine") {
        try co_delay(0)
        try co_delay(0)
        return [Self.request.value, try co_await(other)]
      }
    }
    #expect(seen == ["mine", "none"])
  }

  @Test func innerBindingsShadowOuterOnesAndComeUndone() throws {
    let values = try CoroutineLoop.run { () -> [Int] in
      var values = [Self.depth.value]
      try Self.depth.withValue(1) {
        values.append(Self.depth.value)
        try Self.request.withValue("other local") {
          try Self.depth.withValue(2) {
            try co_delay(0)
            values.append(Self.depth.value)
          }
        }
        values.append(Self.depth.value)
      }
      values.append(Self.depth.value)
      return values
    }
    #expect(values == [0, 1, 2, 1, 0])
  }

  @Test func coroutinesLaunchedInsideABindingInheritItChildOrNot() throws {
    let values = try CoroutineLoop.run { () -> [String] in
      let scope = CoScope()
      return try Self.request.withValue("parent") {
        let child = co_launch(on: DispatchQueue.global()) { () -> [String] in
          let grandchild = co_launch { Self.request.value }
          let rebound = try Self.request.withValue("child") {
            try co_await(co_launch { Self.request.value })
          }
          return [Self.request.value, try co_await(grandchild), rebound]
        }
        let detached = co_launch(detached: true) { Self.request.value }
        let member = scope.launch { Self.request.value }
        let afterwards = co_launch { () -> String in
          try co_delay(0.01)  // runs after the launcher left withValue: still its copy
          return Self.request.value
        }
        return try co_await(child)
          + [try co_await(detached), try co_await(member), try co_await(afterwards)]
      }
    }
    #expect(values == ["parent", "parent", "child", "parent", "parent", "parent"])
  }

  @Test func outsideCoroutinesABindingBelongsToTheThreadAndIsInherited() throws {
    let values = try Self.request.withValue("thread") { () -> [String] in
      let outside = Self.request.value
      let inside = try CoroutineLoop.run { Self.request.value }
      let otherThread = Guarded("")
      let finished = DispatchSemaphore(value: 0)
      // A thread of its own: `DispatchQueue.sync` would run the block on this one.
      Thread {
        otherThread.value = Self.request.value
        finished.signal()
      }.start()
      finished.wait()
      return [outside, inside, otherThread.value]
    }
    #expect(values == ["thread", "thread", "none"])
    #expect(Self.request.value == "none")
  }
}
