import Testing

@testable import Coroutines

/// A loop's timers report their cancellation to the loop while it lives, and to nobody after.
@Suite struct TimerCancellationsTests {
  @Test func aCancelledTimerIsNoLongerPending() {
    let loop = CoroutineTestLoop()
    let timer = loop.schedule(after: 1) {}
    #expect(loop.pendingTimers == 1)
    timer.cancel()
    #expect(loop.pendingTimers == 0)
  }

  @Test func aTimerCancelledAfterItsLoopIsGoneReportsToNobody() {
    var loop: CoroutineTestLoop? = CoroutineTestLoop()
    let timer = loop!.schedule(after: 1) {}
    loop = nil
    timer.cancel()  // must neither crash nor touch the freed loop (AddressSanitizer checks)
    #expect(loop == nil)
  }

  @Test func aReportReachesTheLoopOnlyWhileAttached() {
    final class Box { var reports = 0 }
    let box = Box()
    let cancellations = OwnerHandle<Box>()
    cancellations.withOwner { $0.reports += 1 }
    cancellations.attach(box)
    cancellations.withOwner { $0.reports += 1 }
    cancellations.detach()
    cancellations.withOwner { $0.reports += 1 }
    #expect(box.reports == 1)
  }
}
