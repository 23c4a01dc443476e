import CLinux
import Foundation
import Synchronization

/// A loop's window on the kernel: an epoll instance that the loop sleeps in, the coroutines
/// waiting for descriptors to become ready, and an eventfd through which other threads wake it.
///
/// Only the loop's own thread registers, polls and forgets; ``wake()`` is for any thread.
///
/// Two kinds of registration share one epoll set (the Networking article has the measurements
/// behind them):
/// - A descriptor a coroutine merely borrows (``co_wait(fd:for:timeout:)``) is armed one-shot
///   (`EPOLLONESHOT`) for exactly the directions waited for: an event disarms it as it is
///   reported, and a wait that ends otherwise takes it out, so nothing stays registered.
/// - A descriptor a stream or listener owns is registered once, edge-triggered (`EPOLLET`) for
///   both directions, until it is closed: waiting and waking then cost no system call, and an
///   edge that comes while nobody waits is remembered for the next wait.
final class Poller {
  /// The epoll instance.
  private let epoll: Int32
  /// The eventfd other threads write to wake the loop; level-triggered, read back once woken.
  private let wakeDescriptor: Int32
  /// Waiters by descriptor number: descriptors are small and dense, so an array indexed by them
  /// finds a waiter without hashing.
  private var waiters: [DescriptorWaiters] = []
  /// Directions waited for across all descriptors: while it is zero, the loop never polls
  /// without sleeping. Written only by the loop's thread; atomic so that tests and diagnostics
  /// may read it from others.
  private let waiting = Atomic<Int>(0)
  private let events: UnsafeMutablePointer<epoll_event>
  private static let eventBatch: Int32 = 256
  /// The `data` of the wake-up descriptor's events: no descriptor has this number.
  private static let wakeToken = UInt64.max

  init() {
    epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
    if epoll < 0 { coStop("CoroutineLoop: epoll_create1 failed (\(errnoDescription()))") }
    wakeDescriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
    if wakeDescriptor < 0 { coStop("CoroutineLoop: eventfd failed (\(errnoDescription()))") }
    events = .allocate(capacity: Int(Self.eventBatch))
    var event = epoll_event()
    event.events = EPOLLIN.rawValue
    event.data.u64 = Self.wakeToken
    if epoll_ctl(epoll, EPOLL_CTL_ADD, wakeDescriptor, &event) != 0 {
      coStop("CoroutineLoop: epoll_ctl could not watch its eventfd (\(errnoDescription()))")
    }
  }

  /// Directions waited for across all descriptors (see `waiting`).
  var waiterCount: Int { waiting.load(ordering: .relaxed) }

  /// Adds `change` to `waiting`: a load and a store, as only the loop's thread writes it.
  private func countWaiters(_ change: Int) {
    waiting.store(waiting.load(ordering: .relaxed) &+ change, ordering: .relaxed)
  }

  deinit {
    close(wakeDescriptor)
    close(epoll)
    events.deallocate()
  }

  // MARK: Any thread

  /// Ends the loop's sleep in ``poll(timeout:)``, or the next one if it is not asleep yet.
  func wake() {
    var one: UInt64 = 1
    // EAGAIN means the counter is full, so a wake-up is pending anyway.
    _ = write(wakeDescriptor, &one, 8)
  }

  // MARK: The loop's thread

  /// Registers `resumer` to be resumed with the ready events once `fd` is ready for `events`
  /// (both directions are one registration each). Returns the events at once, without
  /// registering, when they are known to be ready: the descriptor cannot be polled because it
  /// is always ready (a regular file or a directory), or an edge arrived for it while nobody
  /// waited (owned descriptors only).
  ///
  /// `owner` is 0 for a descriptor the caller merely borrows (`co_wait`): it is armed one-shot
  /// for this wait and left silent afterwards. A stream or listener passes its registration
  /// number: its descriptor is registered once, edge-triggered for both directions, and stays
  /// registered until it is closed (closing a descriptor takes it out of every epoll set).
  ///
  /// - Throws: `POSIXError` when the kernel refuses the descriptor (`EBADF` for a closed one).
  func register(
    _ fd: Int32, for events: CoIOEvents, owner: UInt64 = 0,
    _ resumer: CoroutineResumer<CoIOEvents>
  ) throws -> CoIOEvents? {
    let index = Int(fd)
    if index >= waiters.count { grow(toHold: index) }
    if waiters[index].owner != owner {
      // Another owner's registration, left behind when it closed (the kernel dropped it then),
      // or a borrowed descriptor's: start afresh.
      waiters[index].owner = 0
      waiters[index].edges = []
      waiters[index].ends = []
      waiters[index].armed = 0
      waiters[index].inKernel = false
      if owner != 0 {
        let error = registerForEdges(fd, owner: owner)
        if error != 0 { return try refused(events, error) }
      }
    }
    if owner != 0 {
      let seen = waiters[index].edges.intersection(events)
      if !seen.isEmpty {
        waiters[index].edges.subtract(seen.subtracting(waiters[index].ends))
        return seen
      }
    }
    if events.contains(.readable) { waiters[index].readers.append(resumer) }
    if events.contains(.writable) { waiters[index].writers.append(resumer) }
    let error = owner != 0 ? 0 : rearm(fd)
    guard error != 0 else {
      countWaiters(events.rawValue.nonzeroBitCount)
      return nil
    }
    if events.contains(.readable) { waiters[index].readers.removeLast() }
    if events.contains(.writable) { waiters[index].writers.removeLast() }
    return try refused(events, error)
  }

  /// What a registration the kernel refused with `error` means for the wait.
  private func refused(_ events: CoIOEvents, _ error: Int32) throws -> CoIOEvents {
    if error == EPERM { return events }  // regular files are always ready; epoll refuses them
    throw POSIXError(POSIXErrorCode(rawValue: error) ?? .EINVAL)
  }

  /// Takes `resumer` off `fd` if it is still registered there (its wait ended some other way:
  /// a timeout, cancellation, a close) and disarms a borrowed descriptor nobody waits for.
  func forget(_ fd: Int32, _ resumer: CoroutineResumer<CoIOEvents>) {
    let index = Int(fd)
    guard index < waiters.count else { return }
    var removed = 0
    if let position = waiters[index].readers.firstIndex(where: { $0 === resumer }) {
      waiters[index].readers.remove(at: position)
      removed += 1
    }
    if let position = waiters[index].writers.firstIndex(where: { $0 === resumer }) {
      waiters[index].writers.remove(at: position)
      removed += 1
    }
    guard removed > 0 else { return }
    countWaiters(-removed)
    guard waiters[index].owner == 0 else { return }  // an owner's registration stays
    if waiters[index].wanted == 0, waiters[index].armed != 0 {
      // Nobody waits: take the descriptor out of the interest list, so that nothing stays
      // registered for a wait that is over.
      _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
      waiters[index].armed = 0
      waiters[index].inKernel = false
    } else {
      _ = rearm(fd)
    }
  }

  /// Waits up to `timeout` nanoseconds (nil: until woken; 0: not at all) for descriptors and
  /// wake-ups, and resumes the coroutines whose descriptors are ready. Returns true when another
  /// thread's ``wake()`` was among the events.
  @discardableResult
  func poll(timeout: UInt64?) -> Bool {
    let count = wait(timeout: timeout)
    guard count > 0 else { return false }  // a timeout, or EINTR: the loop looks again
    var woken = false
    for offset in 0..<Int(count) {
      let event = events[offset]
      if event.data.u64 == Self.wakeToken {
        var counter: UInt64 = 0
        _ = read(wakeDescriptor, &counter, 8)
        woken = true
      } else {
        deliver(event.events, to: Int32(truncatingIfNeeded: event.data.u64))
      }
    }
    return woken
  }

  /// `epoll_pwait2`, whose timeout has nanoseconds, so timers fire on time; before Linux 5.11,
  /// `epoll_wait`, whose timeout has milliseconds, rounded up so that no timer fires early.
  private func wait(timeout: UInt64?) -> Int32 {
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

  /// Resumes the waiters of `fd` that `kernelEvents` makes ready. A borrowed descriptor is
  /// re-armed for the directions still waited for (the one-shot event disarmed it); an owned
  /// one remembers the edges nobody waited for, for the next wait.
  private func deliver(_ kernelEvents: UInt32, to fd: Int32) {
    let index = Int(fd)
    guard index < waiters.count else { return }
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
        if let both = waiters[index].writers.firstIndex(where: { $0 === reader }) {
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
      if waiters[index].wanted != 0 { _ = rearm(fd) }
    }
  }

  /// Registers an owned descriptor for the rest of its life: both directions, edge-triggered,
  /// so that neither a wait nor its end costs a system call. Returns 0 or the system's error.
  private func registerForEdges(_ fd: Int32, owner: UInt64) -> Int32 {
    var event = epoll_event()
    event.events =
      EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
    event.data.u64 = UInt64(UInt32(bitPattern: fd))
    if epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0 {
      // Still registered one-shot from a borrowed wait on the same open file: take it over.
      guard errno == EEXIST, epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) == 0 else {
        return errno
      }
    }
    let index = Int(fd)
    waiters[index].owner = owner
    waiters[index].inKernel = true
    return 0
  }

  /// Arms a borrowed `fd` one-shot for exactly the directions waited for, adding it to the
  /// interest list if it is not there. Returns 0 or the system's error.
  private func rearm(_ fd: Int32) -> Int32 {
    let index = Int(fd)
    let wanted = waiters[index].wanted
    if wanted == waiters[index].armed { return 0 }
    var event = epoll_event()
    event.events = wanted | EPOLLONESHOT.rawValue
    event.data.u64 = UInt64(UInt32(bitPattern: fd))
    if waiters[index].inKernel {
      if epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) == 0 {
        waiters[index].armed = wanted
        return 0
      }
      // Closed and its number reused since: the old registration went with the old file.
      guard errno == ENOENT else { return errno }
      waiters[index].inKernel = false
    }
    if epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0 {
      guard errno == EEXIST, epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) == 0 else { return errno }
    }
    waiters[index].inKernel = true
    waiters[index].armed = wanted
    return 0
  }

  private func grow(toHold index: Int) {
    let count = max(index + 1, waiters.count * 2, 64)
    waiters.append(
      contentsOf: repeatElement(DescriptorWaiters(), count: count - waiters.count))
  }
}

/// Who waits for one descriptor, and what the kernel has armed for it.
private struct DescriptorWaiters {
  /// The waits for readable and for writable (a wait for both is in both); usually one each.
  var readers: [CoroutineResumer<CoIOEvents>] = []
  var writers: [CoroutineResumer<CoIOEvents>] = []
  /// The epoll events armed now for a borrowed descriptor (zero once a one-shot event fired).
  var armed: UInt32 = 0
  /// The registration number of the stream or listener whose descriptor this is, registered
  /// edge-triggered for its life; 0 for a borrowed descriptor.
  var owner: UInt64 = 0
  /// Directions an edge reported while nobody waited (owned descriptors only).
  var edges: CoIOEvents = []
  /// Directions that will never block again (the peer ended its stream, a hang-up, an error),
  /// kept in `edges` for every later wait (owned descriptors only).
  var ends: CoIOEvents = []
  /// True while the descriptor is in the epoll interest list (armed or not).
  var inKernel = false

  /// The epoll events the waiters need.
  var wanted: UInt32 {
    (readers.isEmpty ? 0 : EPOLLIN.rawValue | EPOLLRDHUP.rawValue)
      | (writers.isEmpty ? 0 : EPOLLOUT.rawValue)
  }
}

/// `strerror(errno)` with the number, for messages.
func errnoDescription(_ code: Int32 = errno) -> String {
  "\(String(cString: strerror(code))), errno \(code)"
}
