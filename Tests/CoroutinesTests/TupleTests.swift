import Dispatch
import Testing

@testable import Coroutines

@Suite struct TupleTests {
  struct Missing: Error, Equatable {}

  /// A coobjc-style call that resolves with several values at once.
  func loadContent(_ path: String) -> CoFuture<(String, [UInt8]?, (any Error)?)> {
    let promise = CoPromise<(String, [UInt8]?, (any Error)?)>()
    DispatchQueue(label: "tuple.load").async {
      if path.hasSuffix(".txt") {
        promise.fulfill((path, Array("hi".utf8), nil))
      } else {
        promise.fulfill((path, nil, Missing()))
      }
    }
    return promise
  }

  @Test func anAwaitedTupleDestructuresNatively() throws {
    try CoroutineLoop.run {
      let (path, data, error) = try co_await(loadContent("notes.txt"))
      #expect(path == "notes.txt")
      #expect(data == Array("hi".utf8))
      #expect(error == nil)

      // coobjc's co_unpack(&a, &b, &c) is plain assignment to existing variables.
      var missingPath = ""
      var missingData: [UInt8]?
      var missingError: (any Error)?
      (missingPath, missingData, missingError) = try co_await(loadContent("image.png"))
      #expect(missingPath == "image.png")
      #expect(missingData == nil)
      #expect(missingError is Missing)

      // A value that is not needed is skipped with `_`.
      let (_, onlyData, _) = try loadContent("a.txt").await()
      #expect(onlyData?.count == 2)
    }
  }

  @Test func coTupleJoinsFuturesOfDifferentTypes() throws {
    try CoroutineLoop.run {
      let name = co_launch { () throws -> String in
        try co_delay(0.002)
        return "Ada"
      }
      let age = co_launch { () -> Int in 36 }
      let avatar = CoPromise<[UInt8]>()
      DispatchQueue(label: "tuple.avatar").async { avatar.fulfill([1, 2, 3]) }
      let (who, years, picture) = try co_await(co_tuple(name, age, avatar))
      #expect(who == "Ada")
      #expect(years == 36)
      #expect(picture == [1, 2, 3])
    }
  }

  /// The Tuples article's program: the same futures, joined inside `CoroutineLoop.run`.
  @Test func coTupleJoinsFuturesOfDifferentTypesInAProgram() throws {
    let (who, years, picture) = try CoroutineLoop.run { () -> (String, Int, [UInt8]) in
      let name = co_launch { () throws -> String in
        try co_delay(0.002)
        return "Ada"
      }
      let age = co_launch { () -> Int in 36 }
      let avatar = CoPromise<[UInt8]>()
      DispatchQueue(label: "tuple.avatar").async { avatar.fulfill([1, 2, 3]) }
      return try co_await(co_tuple(name, age, avatar))
    }
    // who == "Ada", years == 36, picture == [1, 2, 3]
    #expect(who == "Ada")
    #expect(years == 36)
    #expect(picture == [1, 2, 3])
  }

  @Test func coTupleFailsAsSoonAsOneFutureFails() throws {
    try CoroutineLoop.run {
      let never = CoPromise<Int>()
      let failing = CoPromise<String>()
      let joined = co_tuple(never, failing)
      failing.reject(Missing())
      #expect(throws: Missing.self) { try co_await(joined) }
      never.fulfill(1)  // settling the rest later changes nothing
      #expect(throws: Missing.self) { try co_await(joined) }
    }
  }

  @Test func coTupleOfSettledFuturesIsSettledAtOnce() throws {
    let one = CoPromise<Int>()
    one.fulfill(1)
    let two = CoPromise<String>()
    two.fulfill("two")
    let joined = co_tuple(one, two)
    let values = try #require(try joined.result?.get())
    #expect(values.0 == 1)
    #expect(values.1 == "two")
  }
}
