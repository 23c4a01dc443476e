import CLinux
import Foundation

/// How a poller sleeps (in epoll, or on its parker without kernel objects) and hands the ready
/// events to the coroutines that wait for them.
extension Poller {
  /// Waits up to `timeout` nanoseconds (nil: until woken; 0: not at all) for descriptors and
  /// wake-ups, and resumes the coroutines whose descriptors are ready. Returns true when another
  /// thread's ``wake()`` was among the events.
  @discardableResult
  func poll(timeout: UInt64?) -> Bool {
    let epoll = epollDescriptor.load(ordering: .relaxed)
    guard epoll >= 0 else { return park(timeout: timeout) }
    let count = wait(epoll, timeout: timeout)
    guard count > 0 else { return false }  // a timeout, or EINTR: the loop looks again
    var woken = false
    for offset in 0..<Int(count) {
      let event = events[offset]
      if event.data.u64 == Self.wakeToken {
        var counter: UInt64 = 0
        _ = read(wakeDescriptor.load(ordering: .relaxed), &counter, 8)
        woken = true
      } else {
        deliver(event.events, to: event.data.u64)
      }
    }
    return woken
  }

  /// ``poll(timeout:)`` without kernel objects: sleeps until woken or the timeout passes. No
  /// descriptor can be waited for then (registering makes the kernel objects or throws).
  private func park(timeout: UInt64?) -> Bool {
    guard let parker else { return false }
    let deadline = timeout.map { monotonicNanoseconds() &+ $0 }
    return parker.withLock {
      if !wakePending, timeout != 0 { parker.wait(until: deadline) }
      let woken = wakePending
      wakePending = false
      return woken
    }
  }

  /// `epoll_pwait2`, whose timeout has nanoseconds, so timers fire on time; before Linux 5.11,
  /// `epoll_wait`, whose timeout has milliseconds, rounded up so that no timer fires early.
  private func wait(_ epoll: Int32, timeout: UInt64?) -> Int32 {
    if Self.hasPreciseWait {
      var time = timeout.map {
        timespec(tv_sec: Int($0 / 1_000_000_000), tv_nsec: Int($0 % 1_000_000_000))
      }
      let count =
        time == nil
        ? epoll_pwait2(epoll, events, Self.eventBatch, nil, nil)
        : epoll_pwait2(epoll, events, Self.eventBatch, &time!, nil)
      if count >= 0 || errno != ENOSYS { return count }
      Self.hasPreciseWait = false
    }
    let milliseconds = timeout.map { Int32(clamping: ($0 &+ 999_999) / 1_000_000) } ?? -1
    return epoll_wait(epoll, events, Self.eventBatch, milliseconds)
  }

  /// False once `epoll_pwait2` was found missing (a kernel before 5.11). A benign race: every
  /// thread that reads true tries it, and falls back on ENOSYS.
  nonisolated(unsafe) private static var hasPreciseWait = true

  /// Resumes the waiters of the descriptor that `token` names, if the event is of its current
  /// registration, that `kernelEvents` makes ready. A borrowed descriptor is re-armed for the
  /// directions still waited for (the one-shot event disarmed it); an owned one remembers the
  /// edges nobody waited for, for the next wait.
  private func deliver(_ kernelEvents: UInt32, to token: UInt64) {
    let fd = Int32(truncatingIfNeeded: token)
    let index = Int(fd)
    guard index < waiters.count,
      waiters[index].generation == UInt32(truncatingIfNeeded: token >> 32)
    else { return }  // another file's, once under this number
    // An error or a hang-up ends both directions' waits: the system call each retries reports it.
    let failed = kernelEvents & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0
    var ready: CoIOEvents = failed ? [.readable, .writable] : []
    if kernelEvents & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLPRI.rawValue) != 0 {
      ready.insert(.readable)
    }
    if kernelEvents & EPOLLOUT.rawValue != 0 { ready.insert(.writable) }
    var unclaimed = ready
    // Every waiter of a ready direction is woken: each retries its system call, and those that
    // find nothing left wait again.
    if ready.contains(.readable), !waiters[index].readers.isEmpty {
      unclaimed.remove(.readable)
      for reader in waiters[index].readers {
        if let both = waiters[index].writers.firstIndex(where: { $0.isSame(as: reader) }) {
          waiters[index].writers.remove(at: both)  // one wait for both directions
          countWaiters(-1)
        }
        reader.resume(.success(ready))
      }
      countWaiters(-waiters[index].readers.count)
      waiters[index].readers.removeAll(keepingCapacity: true)
    }
    if ready.contains(.writable), !waiters[index].writers.isEmpty {
      unclaimed.remove(.writable)
      for writer in waiters[index].writers { writer.resume(.success(ready)) }
      countWaiters(-waiters[index].writers.count)
      waiters[index].writers.removeAll(keepingCapacity: true)
    }
    if waiters[index].owner != 0 {
      // The peer's end of the stream, a hang-up or an error stays true once reported: no edge
      // will say it again, and the system call that finds it never blocks.
      if kernelEvents & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
        waiters[index].ends.insert(.readable)
      }
      if failed { waiters[index].ends.insert(.writable) }
      waiters[index].edges.formUnion(unclaimed.union(waiters[index].ends))
    } else {
      waiters[index].armed = 0
      if waiters[index].wanted != 0 { _ = rearm(epollDescriptor.load(ordering: .relaxed), fd) }
    }
  }
}
