import Testing

@testable import Coroutines

/// The one ring of the runtime: first in, first out, wrapping and growing in order, and taking
/// elements out of order (a seeded pick, a waiter leaving early).
@Suite struct RingTests {
  @Test func takesInTheOrderGivenAndReusesItsStorage() {
    var queue = Ring<Int>()
    for round in 0..<3 {
      for value in 0..<100 { queue.append(round * 100 + value) }
      #expect(queue.first == round * 100 && queue.last == round * 100 + 99)
      for value in 0..<100 { #expect(queue.popFirst() == round * 100 + value) }
      #expect(queue.isEmpty && queue.first == nil && queue.last == nil)
    }
    #expect(queue.popFirst() == nil)
  }

  @Test func keepsOrderWhileTheRingWrapsAndGrows() {
    var queue = Ring<Int>()
    var expected = 0
    // Two in, one out: the front moves round the ring, which grows while it wraps.
    for value in 0..<1_000 {
      queue.append(2 * value)
      queue.append(2 * value + 1)
      #expect(queue.popFirst() == expected)
      expected += 1
    }
    #expect(queue.count == 1_000)
    while let value = queue.popFirst() {
      #expect(value == expected)
      expected += 1
    }
    #expect(expected == 2_000)
  }

  @Test func growingAWrappedRingKeepsTheOrder() {
    var queue = Ring<Int>()
    for value in 0..<4 { queue.append(value) }  // the first ring: four slots, full
    #expect(queue.popFirst() == 0)
    #expect(queue.popFirst() == 1)
    for value in 4..<7 { queue.append(value) }  // 4 and 5 wrap to the front; 6 grows the ring
    #expect(queue.first == 2 && queue.last == 6 && queue.count == 5)
    #expect(queue.withElement(at: 2) { $0 } == 4)
    #expect(queue.withElement(at: 5) { $0 } == nil)
    var taken: [Int] = []
    while let value = queue.popFirst() { taken.append(value) }
    #expect(taken == [2, 3, 4, 5, 6])
  }

  @Test func swapRemoveTakesAnyElementAndTheFirstTakesItsPlace() {
    var queue = Ring<String>()
    for name in ["a", "b", "c", "d"] { queue.append(name) }
    #expect(queue.swapRemove(at: 2) == "c")
    #expect(queue.count == 3)
    #expect(queue.popFirst() == "b")  // "a" moved to where "c" was
    #expect(queue.popFirst() == "a")
    #expect(queue.popFirst() == "d")
  }

  @Test func countsAndRemovesByPredicate() {
    var queue = Ring<Int>()
    for value in 1...6 { queue.append(value) }
    _ = queue.popFirst()
    #expect(queue.count { $0.isMultiple(of: 2) } == 3)
    #expect(queue.removeFirst { $0 == 4 })
    #expect(!queue.removeFirst { $0 == 1 })  // already taken
    #expect(queue.removeAll() == [2, 3, 5, 6])
    #expect(queue.count == 0)
  }

  @Test func removingByPredicateAcrossTheWrapKeepsTheOthersInOrder() {
    var queue = Ring<Int>()
    for value in 0..<4 { queue.append(value) }
    _ = queue.popFirst()
    _ = queue.popFirst()
    queue.append(4)
    queue.append(5)  // the ring now holds 2, 3 at its end and 4, 5 wrapped to its start
    #expect(queue.removeFirst { $0 == 3 })
    queue.append(6)
    #expect(queue.removeAll() == [2, 4, 5, 6])
    queue.append(7)
    #expect(queue.first == 7 && queue.count == 1)
  }

  /// A full ring whose front has moved on grows with the elements that wrapped round moved to
  /// after the old end: every element once, in order, none retained or released on the way.
  @Test(arguments: [0, 1, 5, 15])
  func aFullWrappedRingOfObjectsGrowsInOrderAndLetsEveryObjectGo(taken: Int) {
    final class Item {
      let value: Int
      init(_ value: Int) { self.value = value }
    }
    weak var watched: Item?
    do {
      var queue = Ring<Item>()
      for value in 0..<16 { queue.append(Item(value)) }  // the first storage: 16 slots, full
      for value in 0..<taken { #expect(queue.popFirst()?.value == value) }
      for value in 16..<(16 + taken) { queue.append(Item(value)) }  // full again, wrapped
      #expect(queue.count == 16 && queue.capacity == 16)
      let last = Item(16 + taken)
      watched = last
      queue.append(last)  // grows
      #expect(queue.capacity == 32)
      #expect(isKnownUniquelyReferenced(&queue.pointer(at: 0).pointee))
      var expected = taken
      while let item = queue.popFirst() {
        #expect(item.value == expected)
        expected += 1
      }
      #expect(expected == 17 + taken)
      queue.append(Item(-1))  // left in the ring: its deinitialiser releases it
    }
    #expect(watched == nil)
  }
}
