import Testing

@testable import Coroutines

/// The list of a task's children: a child that leaves touches no other child when children
/// leave in launch order or in reverse, holes are squeezed out without unbounded renumbering,
/// and every child stays findable at the place it holds.
@Suite struct ChildListTests {
  @Test func childrenLeavingInLaunchOrderTouchNoOtherChild() {
    var list = ChildList()
    defer { list.deallocate() }
    let children = (0..<1_000).map { _ in FakeChild() }
    for child in children { list.append(child) }
    for (index, child) in children.enumerated() {
      list.remove(child)
      #expect(list.count == children.count - index - 1)
      #expect(list.span == list.count)
    }
    // Each child's place was written when it joined and when it left, never in between.
    #expect(children.allSatisfy { $0.placeWrites == 2 && $0.indexInParent == -1 })
    #expect(list.isEmpty)
  }

  /// A full list whose first children have left grows in place (its block resized), the
  /// children still in it moved to its front and keeping their places: none is renumbered.
  @Test func aFullListWithLeftChildrenAtItsFrontGrowsWithoutRenumbering() {
    var list = ChildList()
    defer { list.deallocate() }
    let children = (0..<16).map { _ in FakeChild() }
    for child in children { list.append(child) }  // the first storage: 16 slots, full
    #expect(list.capacity == 16)
    for child in children.prefix(3) { list.remove(child) }
    let places = children.map(\.indexInParent)
    let newcomer = FakeChild()
    list.append(newcomer)  // 13 of 16 in use: grows rather than drops three slots
    #expect(list.capacity == 32 && list.span == 14 && list.count == 14)
    #expect(children.map(\.indexInParent) == places)
    #expect(newcomer.indexInParent == 16)
    let listed = list.nodes.map { ObjectIdentifier($0) }
    #expect(listed == (children.dropFirst(3) + [newcomer]).map { ObjectIdentifier($0) })
    for child in children.dropFirst(3) + [newcomer] { list.remove(child) }
    #expect(list.isEmpty)
  }

  @Test func childrenLeavingInReverseOrderTouchNoOtherChild() {
    var list = ChildList()
    defer { list.deallocate() }
    let children = (0..<1_000).map { _ in FakeChild() }
    for child in children { list.append(child) }
    for child in children.reversed() {
      list.remove(child)
      #expect(list.span == list.count)
    }
    #expect(children.allSatisfy { $0.placeWrites == 2 })
    #expect(list.isEmpty)
  }

  @Test(arguments: [1, 2, 3] as [UInt64])
  func childrenLeavingInAnyOrderStayFindableAndAreRenumberedRarely(seed: UInt64) {
    var random = SplitMix64(seed: seed)
    var list = ChildList()
    defer { list.deallocate() }
    var inList: [FakeChild] = []
    var everyChild: [FakeChild] = []
    // Joins and leaves at random, the list growing to a few thousand and shrinking again.
    for step in 0..<20_000 {
      let joining = step < 10_000 ? random.index(below: 3) != 0 : random.index(below: 3) == 0
      if joining || inList.isEmpty {
        let child = FakeChild()
        list.append(child)
        inList.append(child)
        everyChild.append(child)
      } else {
        let child = inList.remove(at: random.index(below: inList.count))
        list.remove(child)
        #expect(child.indexInParent == -1)
      }
      #expect(list.count == inList.count)
    }
    let listed = Set(list.nodes.map { ObjectIdentifier($0) })
    #expect(listed == Set(inList.map { ObjectIdentifier($0) }))
    // Places are distinct, so each child's slot is its own.
    #expect(Set(inList.map(\.indexInParent)).count == inList.count)
    // At most half of the slots between the bounds are holes, beyond the room last made.
    #expect(list.span <= max(2 * list.count, list.capacity))
    // Joining and leaving wrote two places per child; squeezing added at most one per child.
    let writes = everyChild.reduce(0) { $0 + $1.placeWrites }
    #expect(writes <= 3 * everyChild.count)
    // Leaving at random did leave holes to squeeze (else this test proves little).
    #expect(writes > 2 * everyChild.count)
    for child in inList { list.remove(child) }
    #expect(list.isEmpty)
    #expect(everyChild.allSatisfy { $0.indexInParent == -1 })
  }

  @Test func aListWhereChildrenComeAndGoInTurnStaysSmall() {
    var list = ChildList()
    defer { list.deallocate() }
    var inList: [FakeChild] = []
    for _ in 0..<10_000 {
      let child = FakeChild()
      list.append(child)
      inList.append(child)
      if inList.count > 10 { list.remove(inList.removeFirst()) }
    }
    #expect(list.count == 10)
    #expect(list.capacity <= 64)
    #expect(inList.allSatisfy { $0.placeWrites == 1 })
  }

  @Test func placesStartAgainFromZeroOnceTheListIsEmpty() {
    var list = ChildList()
    defer { list.deallocate() }
    let first = FakeChild()
    let second = FakeChild()
    list.append(first)
    list.append(second)
    #expect(second.indexInParent == 1)
    list.remove(second)
    list.remove(first)
    let third = FakeChild()
    list.append(third)
    #expect(third.indexInParent == 0)
    list.remove(third)
  }

  @Test func aChildNeverAdoptedLeavesTheListAlone() {
    var list = ChildList()
    defer { list.deallocate() }
    let adopted = FakeChild()
    list.append(adopted)
    list.remove(FakeChild())
    #expect(list.count == 1)
    #expect(list.nodes.map { ObjectIdentifier($0) } == [ObjectIdentifier(adopted)])
    list.remove(adopted)
  }

  @Test func aLinkKnowsWhetherItsChildLeft() {
    let child = FakeChild()
    #expect(!ChildLink(node: child).isEmpty)
    #expect(ChildLink(node: nil).isEmpty)
  }

  @Test(arguments: [1, 2] as [UInt64])
  func aParentSettlesAfterChildrenFinishingInAnyOrderAndCancelsThoseLeft(seed: UInt64) throws {
    let finished = Journal<Int>()
    let unwound = Journal<Int>()
    let (value, cancelledTaskSettled) = try CoroutineLoop.run { () -> (Int, Bool) in
      let parent = co_launch { () -> Int in
        var random = SplitMix64(seed: seed)
        // Children that yield a random number of times finish out of launch order.
        for index in 0..<500 {
          let turns = random.index(below: 5)
          co_launch {
            for _ in 0..<turns { try co_delay(0) }
            finished.append(index)
          }
        }
        return 42
      }
      let cancelled = co_launch { () -> Void in
        var random = SplitMix64(seed: seed &+ 1)
        for index in 0..<300 {
          let turns = random.index(below: 5)
          co_launch {
            defer { unwound.append(index) }
            for _ in 0..<turns { try co_delay(0) }
            try co_await(CoPromise<Void>())
          }
        }
        try co_delay(0)
        try co_delay(0)
        try co_delay(0)
        throw CancellationError()
      }
      let value = try co_await(parent)
      #expect(finished.entries.count == 500)
      _ = try? co_await(cancelled)
      return (value, cancelled.isSettled)
    }
    #expect(value == 42)
    #expect(Set(finished.entries) == Set(0..<500))
    #expect(cancelledTaskSettled)
    #expect(Set(unwound.entries) == Set(0..<300))
  }
}

/// A stand-in child that counts how often its place is written.
private final class FakeChild: TaskNode, @unchecked Sendable {  // reason: used on one thread
  var placeWrites = 0
  var indexInParent = -1 {
    didSet { placeWrites += 1 }
  }
  var unhandledErrorHandler: HandlerBox? { nil }
  func cancel() {}
  func adopt(_ child: any TaskNode) -> Bool { true }
  func childFinished(_ child: any TaskNode) -> (any TaskNode)? { nil }
  func cancelOwnCoroutine() -> [any TaskNode] { [] }
  func failedToStart(_ error: CoroutineError) {}
  func removeChild(_ child: any TaskNode) {}
}
