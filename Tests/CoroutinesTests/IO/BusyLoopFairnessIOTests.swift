import Foundation
import Synchronization
import Testing

@testable import Coroutines

extension IOTests {
  /// A loop that never runs out of jobs still looks at its descriptors at least every
  /// millisecond of running them, and runs the coroutines its descriptors woke before those
  /// that yielded meanwhile, so a coroutine that computes in slices and yields delays a
  /// descriptor's wake-up by at most the rest of its slice.
  @Suite struct BusyLoopFairnessTests {
    /// Spins on the calling thread until `nanoseconds` have passed on the monotonic clock: a
    /// slice of computation, however loaded the machine is.
    private static func compute(for nanoseconds: UInt64) {
      let start = monotonicNanoseconds()
      while monotonicNanoseconds() &- start < nanoseconds {}
    }

    /// With a timeout on the wait, a timer is pending and the loop looks on the clock reading
    /// it takes to fire timers; without one, it reads the clock itself.
    @Test(arguments: [60, nil] as [Double?])
    func aComputingCoroutineThatYieldsDelaysADescriptorWakeUpByTheRestOfItsSlice(timeout: Double?)
      throws
    {
      // Counted in slices, not in time: a slice lasts at least a millisecond whatever else the
      // machine does, and the loop must look at its descriptors after every one.
      let slice: UInt64 = 1_000_000
      let writtenAt = 5
      let mostSlices = 300
      let (woken, lag) = try runOnLoopLeavingNoDescriptor { () throws -> (Bool, Int) in
        let pipe = try TestPipe()
        defer { pipe.close() }
        let slices = Atomic<Int>(0)
        let wokenAt = Atomic<Int>(-1)
        let waiter = co_launch {
          _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: timeout)
          wokenAt.store(slices.load(ordering: .relaxed), ordering: .relaxed)
        }
        try co_delay(0)  // the waiter is registered
        // One job is always ready (this coroutine, yielding), so the loop never sleeps in its
        // poller: only its looks while busy can see the pipe.
        while wokenAt.load(ordering: .relaxed) < 0, slices.load(ordering: .relaxed) < mostSlices {
          if slices.load(ordering: .relaxed) == writtenAt {
            var byte: UInt8 = 1
            #expect(write(pipe.writeEnd, &byte, 1) == 1)
          }
          Self.compute(for: slice)
          slices.add(1, ordering: .relaxed)
          try co_delay(0)
        }
        let woken = wokenAt.load(ordering: .relaxed)
        if woken < 0 { waiter.cancel() }
        _ = try? waiter.await()
        return (woken >= 0, woken - writtenAt)
      }
      #expect(woken, "the waiter never woke in \(mostSlices) slices")
      // Written during a slice, seen by the look after it, and run before the coroutine that
      // yielded at that slice's end.
      #expect(lag == 1, "the waiter woke \(lag) slices after the write")
    }

    /// Several coroutines computing in slices make a turn of the loop several slices long: the
    /// loop looks at its descriptors within the turn, not only at its end. The byte comes from
    /// another thread, as a socket's data would, at any point of a slice.
    @Test(arguments: [60, nil] as [Double?])
    func manyComputingCoroutinesDelayADescriptorWakeUpByAboutOneSlice(timeout: Double?) throws {
      let slice: UInt64 = 1_000_000
      let computing = 20
      let writeAfter = 50
      let mostSlices = 1_000
      let (woken, lag) = try runOnLoopLeavingNoDescriptor { () throws -> (Bool, Int) in
        let pipe = try TestPipe()
        defer { pipe.close() }
        let (readEnd, writeEnd) = (pipe.readEnd, pipe.writeEnd)
        let progress = Progress()
        let workers = (0..<computing).map { _ in
          co_launch {
            while progress.wokenAt.load(ordering: .relaxed) < 0,
              progress.slices.load(ordering: .relaxed) < mostSlices
            {
              progress.slices.add(1, ordering: .relaxed)
              Self.compute(for: slice)
              try co_delay(0)
            }
          }
        }
        let waiter = co_launch {
          _ = try co_wait(fd: readEnd, for: .readable, timeout: timeout)
          progress.wokenAt.store(progress.slices.load(ordering: .relaxed), ordering: .relaxed)
        }
        try co_delay(0.001)  // the waiter is registered, and a timer has fired meanwhile
        let writer = Thread {
          while progress.slices.load(ordering: .relaxed) < writeAfter {}
          progress.writtenAt.store(progress.slices.load(ordering: .relaxed), ordering: .relaxed)
          var byte: UInt8 = 1
          _ = write(writeEnd, &byte, 1)
          progress.written.store(true, ordering: .releasing)
        }
        writer.start()
        for worker in workers { _ = try? worker.await() }
        let woken = progress.wokenAt.load(ordering: .relaxed)
        if woken < 0 { waiter.cancel() }
        _ = try? waiter.await()
        while !progress.written.load(ordering: .acquiring) {}  // the pipe outlives the write
        return (woken >= 0, woken - progress.writtenAt.load(ordering: .relaxed))
      }
      #expect(woken, "the waiter never woke in \(mostSlices) slices")
      // Seen by the look after the slice it was written in (or after the next, if it came just
      // after a look), and run before the coroutines queued behind: at most one slice started
      // in between, of the \(computing) that make a turn.
      #expect(lag <= 1, "the waiter woke \(lag) slices after the write, of \(computing) a turn")
    }

    /// Slices started by the computing coroutines, the count when the byte was written and when
    /// the waiter woke, and whether the writer is done with the pipe.
    private final class Progress: Sendable {
      let slices = Atomic<Int>(0)
      let wokenAt = Atomic<Int>(-1)
      let writtenAt = Atomic<Int>(0)
      let written = Atomic<Bool>(false)
    }
  }
}
