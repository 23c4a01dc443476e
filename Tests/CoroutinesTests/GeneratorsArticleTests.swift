import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// The samples of Docs/Coroutines.docc/Articles/Generators.md, verbatim between the markers.
@Suite struct GeneratorDocSamples {
  final class Tree: Sendable {
    let value: Int
    let children: [Tree]
    init(_ value: Int, _ children: [Tree] = []) {
      self.value = value
      self.children = children
    }
  }

  @Test func squares() {
    // sample
    let squares = co_sequence { (yield: CoYield<Int>) in
      for n in 1... { try yield(n * n) }
    }
    let firstThree = Array(squares.prefix(3))  // [1, 4, 9]
    // end
    #expect(firstThree == [1, 4, 9])
  }

  @Test func treeWalk() {
    // sample
    let tree = Tree(1, [Tree(2, [Tree(3)]), Tree(4)])
    let walk = co_sequence { (yield: CoYield<Int>) in
      func visit(_ node: Tree) throws {
        try yield(node.value)
        for child in node.children { try visit(child) }
      }
      try visit(tree)
    }
    let order = Array(walk)  // [1, 2, 3, 4]
    // end
    #expect(order == [1, 2, 3, 4])
  }

  @Test func stopEarly() {
    let log = Journal<String>()
    @Sendable func print(_ line: String) { log.append(line) }  // what the sample prints
    // sample
    do {
      let numbers = co_sequence { (yield: CoYield<Int>) in
        print("opened")
        defer { print("closed") }
        for n in 1... { try yield(n) }
      }
      for n in numbers where n == 2 { break }
    }
    // prints "opened", then "closed"
    // end
    #expect(log.entries == ["opened", "closed"])
  }

  @Test func errors() throws {
    // sample
    struct ParseError: Error {}
    let fields = co_sequence { (yield: CoYield<Int>) in
      for text in ["1", "2", "x"] {
        guard let value = Int(text) else { throw ParseError() }
        try yield(value)
      }
    }
    let parsed = Array(fields)  // [1, 2]
    // fields.error is ParseError, and fields.nextOrThrow() throws it
    // end
    #expect(parsed == [1, 2])
    #expect(fields.error is ParseError)
    #expect(throws: ParseError.self) { try fields.nextOrThrow() }
  }

  @Test func messageQueue() throws {
    let handled = ModelsLog<String>()
    func handle(_ message: String) { handled.append(message) }
    // sample
    let queue = DispatchQueue(label: "producer")
    try CoroutineLoop.run {
      let messages = co_sequence(on: queue) { (yield: CoYield<String>) in
        var id = 0
        while true {
          id += 1
          try yield("message \(id)")
        }
      }
      for message in messages.prefix(3) { handle(message) }
    }
    // end
    #expect(handled.values == ["message 1", "message 2", "message 3"])
    // The dropped producer unwinds on its queue; a barrier job runs after it.
    queue.sync {}
  }

  @Test func suspendingInlineBody() throws {
    let shown = ModelsLog<String>()
    func fetch(_ name: String) -> CoFuture<String> {
      let page = CoPromise<String>()
      DispatchQueue(label: "fetch").async { page.fulfill("<\(name)>") }
      return page
    }
    func show(_ page: String) { shown.append(page) }
    // sample
    try CoroutineLoop.run {
      let pages = co_sequence { (yield: CoYield<String>) in
        for name in ["index", "about"] { try yield(try co_await(fetch(name))) }
      }
      for page in pages { show(page) }
    }
    // end
    #expect(shown.values == ["<index>", "<about>"])
  }
}
