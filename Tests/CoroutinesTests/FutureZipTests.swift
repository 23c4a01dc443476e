import Testing

@testable import Coroutines

@Suite struct FutureZipTests {
  @Test func zipCombinesDifferentTypes() {
    let name = CoPromise<String>()
    let age = CoPromise<Int>()
    let admin = CoPromise<Bool>()
    let zipped = name.zip(age, admin)
    admin.fulfill(true)
    name.fulfill("Ada")
    #expect(zipped.result == nil)
    age.fulfill(36)
    let values = value(zipped.result)
    #expect(values?.0 == "Ada")
    #expect(values?.1 == 36)
    #expect(values?.2 == true)
  }

  @Test func zipOfOneIsATupleOfOne() {
    let zipped = fulfilled(1).zip()
    #expect(value(zipped.result) == 1)
  }

  @Test func zipFailsFastAndCancelsTheRest() {
    let name = CoPromise<String>()
    let age = CoPromise<Int>()
    let zipped = name.zip(age)
    age.reject(Failure.second)
    #expect(failure(zipped.result) == .second)
    #expect(isCancellation(name.result))
  }

  @Test func cancellingAZipCancelsEveryInput() {
    let name = CoPromise<String>()
    let age = CoPromise<Int>()
    let zipped = name.zip(age)
    zipped.cancel()
    #expect(isCancellation(name.result))
    #expect(isCancellation(age.result))
  }

  @Test func zipOnASchedulerDeliversThere() {
    let scheduler = CoroutineTestLoop()
    let zipped = fulfilled("a").zip(fulfilled(1), on: scheduler)
    #expect(zipped.result == nil)
    scheduler.runUntilIdle()
    #expect(value(zipped.result)?.0 == "a")
  }

  @Test func zipOfTasksInACoroutine() throws {
    let (user, avatar, unread) = try CoroutineLoop.run { () -> (String, [UInt8], Int) in
      let fetchUser = { co_launch { () -> String in "ada" } }
      let fetchAvatar = { co_launch { () -> [UInt8] in [1, 2] } }
      let countUnread = { co_launch { () -> Int in 3 } }
      let (user, avatar, unread) = try co_await(fetchUser().zip(fetchAvatar(), countUnread()))
      return (user, avatar, unread)
    }
    #expect(user == "ada")
    #expect(avatar == [1, 2])
    #expect(unread == 3)
  }
}
