import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// How many times each of `count` numbered jobs ran, counted from any thread.
private final class RunCounts: @unchecked Sendable {  // every slot is an atomic
  let count: Int
  private let slots: UnsafeMutablePointer<Atomic<Int>>

  init(count: Int) {
    self.count = count
    slots = .allocate(capacity: count)
    for index in 0..<count { (slots + index).initialize(to: Atomic(0)) }
  }

  deinit {
    slots.deinitialize(count: count)
    slots.deallocate()
  }

  func ran(_ index: Int) { slots[index].add(1, ordering: .relaxed) }

  func times(_ index: Int) -> Int { slots[index].load(ordering: .relaxed) }

  /// The numbers of the jobs that did not run exactly once.
  var notOnce: [Int] { (0..<count).filter { slots[$0].load(ordering: .relaxed) != 1 } }

  var total: Int { (0..<count).reduce(0) { $0 + slots[$1].load(ordering: .relaxed) } }
}

/// Runs each body on a thread of its own, all started together, and returns once all ended.
private func onThreads(_ bodies: [@Sendable () -> Void]) {
  let done = DispatchGroup()
  let start = DispatchSemaphore(value: 0)
  for body in bodies {
    done.enter()
    let thread = Thread {
      start.wait()
      body()
      done.leave()
    }
    thread.start()
  }
  for _ in bodies { start.signal() }
  done.wait()
}

/// A group loop's ready queue with its owner and thieves racing: the owner queues past the
/// ring (so it spills) and takes, thieves take halves from it and from each other, and every
/// job is taken exactly once. Bounded in count; run under ThreadSanitizer by `make sanitize`.
@Suite struct StealQueueStressTests {
  static let jobs = 60_000
  static let thieves = 3

  /// A job's entry: its number, shifted past the start bit (the queue never follows it).
  static func entry(_ number: Int) -> StealableJob { StealableJob(bits: UInt(number + 1) << 4) }
  static func number(_ job: StealableJob) -> Int { Int(job.bits >> 4) - 1 }

  @Test func everyJobIsTakenOnceWhileThievesRaceTheOwner() {
    let queues = (0...Self.thieves).map { _ in StealQueue() }
    let runs = RunCounts(count: Self.jobs)
    let taken = SharedCount()
    /// Takes and "runs" every job of `queue` (its owner's thread only).
    @Sendable func drain(_ queue: StealQueue) {
      while let job = queue.popFirst() {
        runs.ran(Self.number(job))
        taken.value.add(1, ordering: .relaxed)
      }
    }
    let owner: @Sendable () -> Void = {
      let mine = queues[0]
      var next = 0
      var round = 0
      while next < Self.jobs {
        // Bursts of up to a ring and a half, so the ring fills and spills, with some taken in
        // between: the owner's takes race the thieves' for the same slots.
        let burst = min(Self.jobs - next, (round % 7 + 1) * StealQueue.capacity / 5)
        for _ in 0..<burst {
          mine.append(Self.entry(next))
          next += 1
        }
        for _ in 0..<(round % 3) * 16 {
          guard let job = mine.popFirst() else { break }
          runs.ran(Self.number(job))
          taken.value.add(1, ordering: .relaxed)
        }
        round += 1
      }
      while taken.value.load(ordering: .relaxed) < Self.jobs { drain(mine) }
    }
    let thieves: [@Sendable () -> Void] = (1...Self.thieves).map { index in
      {
        let mine = queues[index]
        var turn = 0
        while taken.value.load(ordering: .relaxed) < Self.jobs {
          // The owner's queue every other time, the other thieves' in turn between.
          turn += 1
          var victim = turn.isMultiple(of: 2) ? 0 : (index + turn / 2) % Self.thieves + 1
          if victim == index { victim = 0 }
          if mine.steal(from: queues[victim]) > 0 { drain(mine) }
        }
      }
    }
    onThreads([owner] + thieves)
    #expect(runs.notOnce.isEmpty, "jobs not taken exactly once: \(runs.notOnce.prefix(10))")
    #expect(runs.total == Self.jobs)
    let leftOver = queues.reduce(0) { $0 + $1.count }
    #expect(leftOver == 0)
  }
}

/// A group loop's ready queue with threads outside the group pushing into its overflow while its
/// owner queues and takes (moving a batch of the overflow into its ring at each "turn") and
/// thieves take halves: every job is taken exactly once. Bounded in count; run under
/// ThreadSanitizer by `make sanitize`.
@Suite struct StealQueueOutsidePushStressTests {
  static let ownJobs = 30_000
  static let pushers = 3
  static let pushedEach = 10_000
  static let thieves = 2
  static var total: Int { ownJobs + pushers * pushedEach }

  @Test func everyJobIsTakenOnceWhileOutsideThreadsPushAndThievesRace() {
    let queues = (0...Self.thieves).map { _ in StealQueue() }
    let runs = RunCounts(count: Self.total)
    let taken = SharedCount()
    @Sendable func ran(_ job: StealableJob) {
      runs.ran(StealQueueStressTests.number(job))
      taken.value.add(1, ordering: .relaxed)
    }
    let owner: @Sendable () -> Void = {
      let mine = queues[0]
      var next = 0
      var round = 0
      while next < Self.ownJobs || taken.value.load(ordering: .relaxed) < Self.total {
        _ = mine.takeOverflowBatch()
        let burst = min(Self.ownJobs - next, (round % 7 + 1) * StealQueue.capacity / 5)
        for _ in 0..<burst {
          mine.append(StealQueueStressTests.entry(next))
          next += 1
        }
        for _ in 0..<(round % 3 + 1) * 16 {
          guard let job = mine.popFirst() else { break }
          ran(job)
        }
        round += 1
      }
    }
    let pushers: [@Sendable () -> Void] = (0..<Self.pushers).map { pusher in
      {
        let first = Self.ownJobs + pusher * Self.pushedEach
        for number in first..<(first + Self.pushedEach) {
          _ = queues[0].pushFromElsewhere(StealQueueStressTests.entry(number))
        }
      }
    }
    let thieves: [@Sendable () -> Void] = (1...Self.thieves).map { index in
      {
        let mine = queues[index]
        var turn = 0
        while taken.value.load(ordering: .relaxed) < Self.total {
          turn += 1
          var victim = turn.isMultiple(of: 2) ? 0 : (index + turn / 2) % Self.thieves + 1
          if victim == index { victim = 0 }
          if mine.steal(from: queues[victim]) > 0 {
            while let job = mine.popFirst() { ran(job) }
          }
        }
      }
    }
    onThreads([owner] + pushers + thieves)
    #expect(runs.notOnce.isEmpty, "jobs not taken exactly once: \(runs.notOnce.prefix(10))")
    #expect(runs.total == Self.total)
    let leftOver = queues.reduce(0) { $0 + $1.count }
    #expect(leftOver == 0)
  }
}

/// A loop's inbox with many threads pushing and the loop's thread taking, then closing it while
/// pushes still come: every job pushed before the close is taken exactly once, every one after
/// it is refused (and never taken). Bounded in count; run under ThreadSanitizer by
/// `make sanitize`.
@Suite struct RemoteInboxStressTests {
  static let producers = 4
  static let jobsEach = 15_000

  @Test func everyAcceptedJobIsTakenOnceInOrderAndNoneAfterTheClose() {
    let inbox = SharedInbox()
    let total = Self.producers * Self.jobsEach
    let runs = RunCounts(count: total)
    let accepted = RunCounts(count: total)
    let pushesDone = SharedCount()
    let outOfOrder = SharedCount()
    /// The number of the job that ran last (written and read on the consumer's thread).
    let lastRan = SharedCount(-1)
    let producers: [@Sendable () -> Void] = (0..<Self.producers).map { producer in
      {
        for step in 0..<Self.jobsEach {
          let number = producer * Self.jobsEach + step
          let job = LoopJob.closure {
            runs.ran(number)
            lastRan.value.store(number, ordering: .relaxed)
          }
          if inbox.queue.push(job) != .refused { accepted.ran(number) }
        }
        pushesDone.value.add(1, ordering: .releasing)
      }
    }
    let consumer: @Sendable () -> Void = {
      // Takes what comes; once half the jobs were taken it closes the inbox as soon as it finds
      // it empty, with the producers still pushing.
      var taken = 0
      var lastStep = [Int](repeating: -1, count: Self.producers)
      while true {
        inbox.queue.takeAll { job in
          guard case .closure(let body) = consume job else { return }
          body()
          taken += 1
          // Each producer's jobs come out in the order it pushed them.
          let number = lastRan.value.load(ordering: .relaxed)
          let (producer, step) = number.quotientAndRemainder(dividingBy: Self.jobsEach)
          if step <= lastStep[producer] { outOfOrder.value.add(1, ordering: .relaxed) }
          lastStep[producer] = step
        }
        if taken >= total / 2 || pushesDone.value.load(ordering: .acquiring) == Self.producers,
          inbox.queue.close()
        {
          return
        }
      }
    }
    onThreads(producers + [consumer])
    // Closed for good: a push now is refused too.
    let late = inbox.queue.push(.closure { Issue.record("a job pushed after the close ran") })
    #expect(late == .refused)
    let wrong = (0..<total).filter { runs.times($0) != accepted.times($0) }
    #expect(wrong.isEmpty, "taken other than once if accepted, or taken though refused")
    let acceptedCount = accepted.total
    #expect(acceptedCount >= total / 2)
    #expect(runs.total == acceptedCount)
    #expect(outOfOrder.value.load(ordering: .relaxed) == 0)
  }
}

/// An atomic integer that escaping closures can share (an `Atomic` itself cannot be captured).
private final class SharedCount: Sendable {
  let value: Atomic<Int>
  init(_ initial: Int = 0) { value = Atomic(initial) }
}

/// A ``RemoteInbox`` shared by the test's threads (the inbox is noncopyable, so a class holds
/// it, as a loop does).
private final class SharedInbox: Sendable {
  let queue = RemoteInbox()
}
