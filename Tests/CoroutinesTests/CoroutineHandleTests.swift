import Dispatch
import Testing

@testable import Coroutines

@Suite struct CoroutineHandleTests {
  @Test func thereIsNoCurrentCoroutineInPlainCode() {
    #expect(CoroutineHandle.current == nil)
  }

  @Test func theHandleNamesTheCoroutineAndItsScheduler() {
    let loop = CoroutineTestLoop()
    let task = co_launch(on: loop, name: "worker") { () -> CoroutineHandle? in
      CoroutineHandle.current
    }
    loop.runUntilIdle()
    let handle = value(task.result) ?? nil
    #expect(handle?.name == "worker")
    #expect(handle?.scheduler === loop)
    #expect(handle?.isCancelled == false)
    #expect(handle?.isFinished == true)
    #expect(handle?.description.hasPrefix("coroutine \"worker\" 0x") == true)
  }

  @Test func theHandleSeesCancellation() {
    let loop = CoroutineTestLoop()
    let seen = Journal<Bool>()
    let task = co_launch(on: loop) {
      let me = CoroutineHandle.current!
      seen.append(me.isCancelled)
      _ = try? co_delay(10)
      seen.append(me.isCancelled)
    }
    loop.runUntilIdle()
    task.cancel()
    loop.runUntilIdle()
    #expect(seen.entries == [false, true])
  }

  @Test func handlesAreEqualForTheSameCoroutineOnly() throws {
    let handles = try CoroutineLoop.run { () -> [CoroutineHandle] in
      let first = CoroutineHandle.current!
      try co_delay(0)
      let again = CoroutineHandle.current!
      let other = try co_await(co_launch { CoroutineHandle.current! })
      #expect(first.name == "CoroutineLoop.run")
      #expect(other.name == nil)
      #expect(other.description.contains("(unnamed)"))
      return [first, again, other]
    }
    #expect(handles[0] == handles[1])
    #expect(handles[0] != handles[2])
    #expect(handles[0].id != handles[2].id)
    #expect(Set(handles).count == 2)
  }

  @Test func theSchedulerStaysTheHomeWhileHoppingForWork() throws {
    let queue = DispatchQueue(label: "handle.hop")
    let (home, during) = try CoroutineLoop.run { () -> (Bool, Bool) in
      let loop = CoroutineLoop.current!
      let during = try co_await(on: queue) { CoroutineHandle.current!.scheduler === loop }
      return (CoroutineHandle.current!.scheduler === loop, during)
    }
    #expect(home && during)
  }

  @Test func aGeneratorBodyHasAHandleOfItsOwn() throws {
    let outside = try CoroutineLoop.run { () -> Bool in
      let me = CoroutineHandle.current!
      let inside = co_sequence { (yield: CoYield<CoroutineHandle>) in
        try yield(CoroutineHandle.current!)
      }
      return inside.next()! != me
    }
    #expect(outside)
  }

  // MARK: doc-comment samples

  @Test func theLoggingSample() throws {
    let lines = Journal<String>()
    let log = { @Sendable (line: String) in lines.append(line) }
    try CoroutineLoop.run { () -> Void in
      co_launch(name: "refresh") {
        if let me = CoroutineHandle.current {
          log("\(me.name ?? "?") on \(me.scheduler), cancelled: \(me.isCancelled)")
        }
      }
    }
    #expect(lines.entries.count == 1)
    #expect(lines.entries.first?.hasPrefix("refresh on ") == true)
    #expect(lines.entries.first?.hasSuffix("cancelled: false") == true)
  }
}
