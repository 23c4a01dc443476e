import Dispatch
import Synchronization
import Testing

@testable import Coroutines

/// Channel waiters live in the waiting coroutine's frame (on the heap for a shared stack or a
/// select case) and are linked into their channel's queue; these pin down what that layout
/// must keep: order, removal from the middle, and the shared-stack rule.
@Suite struct ChannelWaiterTests {
  @Test func aCancelledWaiterInTheMiddleLeavesTheOthersInOrder() throws {
    let received = ModelsLog<String>()
    try CoroutineLoop.run {
      let channel = CoChannel<Int>()
      let names = ["first", "middle", "last"]
      var receivers: [CoTask<Void>] = []
      for name in names {
        receivers.append(
          co_launch {
            let value = try channel.receive()
            received.append("\(name) \(value)")
          })
      }
      try co_delay(0)  // every receiver is queued now, in launch order
      receivers[1].cancel()
      #expect(throws: CancellationError.self) { try co_await(receivers[1]) }
      try channel.send(1)
      try channel.send(2)
      try co_await(receivers[0])
      try co_await(receivers[2])
      #expect(!channel.trySend(3))  // the cancelled receiver is no longer queued
    }
    #expect(received.values == ["first 1", "last 2"])
  }

  @Test func waitingSendersAreServedInOrderAfterOneIsCancelled() throws {
    try CoroutineLoop.run {
      let channel = CoChannel<Int>()
      let senders = (1...4).map { value in co_launch { try channel.send(value) } }
      try co_delay(0)
      senders[0].cancel()
      senders[2].cancel()
      #expect(try channel.receive() == 2)
      #expect(try channel.receive() == 4)
      #expect(channel.tryReceive() == nil)
      for sender in senders { _ = sender.result }
    }
  }

  /// The value is handed to a parked shared-stack receiver while another coroutine runs on its
  /// stack's addresses: with the waiter in the receiver's frame, the hand-over would land in
  /// the other coroutine's frames and the receiver would find no value.
  @Test func aValueHandedToAParkedSharedStackReceiverArrivesIntact() throws {
    let size = 104 * 1024  // a size no other test uses: a fresh ring, so the stacks are known
    let (received, sent) = try CoroutineLoop.run { () -> ([Int], Bool) in
      let channel = CoChannel<[Int]>()
      let receiver = co_launch(stackSize: size, stack: .shared) { try channel.receive() }
      for _ in 1..<SharedStackSet.stacksPerSize {
        co_launch(stackSize: size, stack: .shared) {}
      }
      // The next shared coroutine of this size starts on the receiver's stack, over its frames.
      let sender = co_launch(stackSize: size, stack: .shared) { () -> Bool in
        let filler = (0..<256).map { $0 &* 0x5151 }
        try channel.send(Array(0..<64))
        return filler == (0..<256).map { $0 &* 0x5151 }
      }
      return (try receiver.await(), try sender.await())
    }
    #expect(received == Array(0..<64))
    #expect(sent)
  }

  /// The same for a parked shared-stack sender whose value a receiver takes.
  @Test func aParkedSharedStackSenderIsToldItsValueWasTaken() throws {
    let size = 108 * 1024
    let received = try CoroutineLoop.run { () -> [Int] in
      let channel = CoChannel<[Int]>()
      let sender = co_launch(stackSize: size, stack: .shared) { try channel.send(Array(0..<64)) }
      for _ in 1..<SharedStackSet.stacksPerSize {
        co_launch(stackSize: size, stack: .shared) {}
      }
      let receiver = co_launch(stackSize: size, stack: .shared) { try channel.receive() }
      try sender.await()
      return try receiver.await()
    }
    #expect(received == Array(0..<64))
  }

  @Test func selectWorksOnASharedStack() throws {
    let got = try CoroutineLoop.run { () -> [String] in
      let numbers = CoChannel<Int>()
      let words = CoChannel<String>()
      let picker = co_launch(stack: .shared) { () -> [String] in
        var got: [String] = []
        for _ in 0..<4 {
          got.append(
            try co_select { select in
              select.receive(from: numbers) { "number \($0)" }
              select.receive(from: words) { "word \($0)" }
            })
        }
        return got
      }
      let other = co_launch(stack: .shared) {
        try numbers.send(1)
        try words.send("two")
        try words.send("three")
        try numbers.send(4)
      }
      try co_await(other)
      return try co_await(picker)
    }
    #expect(got == ["number 1", "word two", "word three", "number 4"])
  }
}
