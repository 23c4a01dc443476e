import CLinux
import Foundation
import Synchronization

/// A loop's window on the kernel: an epoll instance that the loop sleeps in, the coroutines
/// waiting for descriptors to become ready, and an eventfd through which other threads wake it.
///
/// Only the loop's own thread registers, polls and forgets; ``wake()`` and ``unregister(_:)``
/// are for any thread.
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
  /// The epoll instance, or -1 while it could not be made (see "Out of descriptors" below).
  /// Written once, by the loop's thread; atomic because another thread may take an owned
  /// descriptor out of the set (``unregister(_:)``).
  private let epollDescriptor: Atomic<Int32>
  /// The eventfd other threads write to wake the loop; level-triggered, read back once woken.
  /// -1 while the epoll instance could not be made; written once, read by wakers.
  private let wakeDescriptor: Atomic<Int32>
  /// Where the loop sleeps while the kernel objects could not be made: a condition variable,
  /// with `wakePending` under its lock. Nil when they were made at once.
  private let parker: ConditionLock?
  private var wakePending = false
  /// Creations still to fail on purpose (see ``failingCreation(times:_:)``); loop thread only.
  private var injectedFailures: Int
  /// Waiters by descriptor number: descriptors are small and dense, so an array indexed by them
  /// finds a waiter without hashing.
  private var waiters: [DescriptorWaiters] = []
  /// Directions waited for across all descriptors: while it is zero, the loop never polls
  /// without sleeping. Written only by the loop's thread; atomic so that tests and diagnostics
  /// may read it from others.
  private let waiting = Atomic<Int>(0)
  /// The generation stamped into the next registration (see `DescriptorWaiters.generation`).
  private var nextGeneration: UInt32 = 0
  private let events: UnsafeMutablePointer<epoll_event>
  private static let eventBatch: Int32 = 256
  /// The `data` of the wake-up descriptor's events: no descriptor has the number in its low
  /// half (-1), so no registration's token is this.
  private static let wakeToken = UInt64.max
  /// Bytes a stream's `read(upTo:)` receives into before copying out what arrived (see
  /// ``readBuffer``).
  static let readBufferSize = 65536
  private var readScratch: UnsafeMutableRawBufferPointer?

  // Out of descriptors: a loop is made where no error can be thrown (a group's loops in its
  // non-throwing initializer, the shared poller on first use, `CoroutineLoop.run`), and a
  // process out of descriptors must not be stopped for it. So the kernel objects are made with
  // the poller, which keeps the hot paths as they are, and when that fails the loop sleeps on
  // a condition variable instead, which
  // needs no descriptor; timers and other threads' jobs work as usual. The first wait for a
  // descriptor tries again, and throws `POSIXError(.EMFILE)` (the system's error) if it still
  // cannot: the call that needed a descriptor fails, and a later one may succeed. Once made,
  // the kernel objects stay. A waker reads which way the loop sleeps without a lock: the way
  // changes only on the loop's thread while it runs a job, never during a sleep that a waker
  // could be ending (wakers end only sleeps announced by the loop's `sleeping` flag), so a
  // wake-up sent the old way is for a sleep that is already over.

  init() {
    var failures = 0
    if Self.injections.load(ordering: .relaxed) > 0 {
      failures = Thread.current.threadDictionary[Self.injectionKey] as? Int ?? 0
    }
    let made = Self.makeKernelObjects(failures: &failures)
    injectedFailures = failures
    epollDescriptor = Atomic(made.epoll)
    wakeDescriptor = Atomic(made.wake)
    parker = made.error == 0 ? nil : ConditionLock()
    events = .allocate(capacity: Int(Self.eventBatch))
  }

  /// Makes an epoll instance watching a new eventfd: both descriptors, or -1 and -1 with the
  /// system's error. `failures` is how many tries are still to fail on purpose.
  private static func makeKernelObjects(failures: inout Int) -> (
    epoll: Int32, wake: Int32, error: Int32
  ) {
    if failures > 0 {
      failures -= 1
      return (-1, -1, EMFILE)
    }
    let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
    if epoll < 0 { return (-1, -1, errno) }
    let wake = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
    var event = epoll_event()
    event.events = EPOLLIN.rawValue
    event.data.u64 = wakeToken
    if wake < 0 || epoll_ctl(epoll, EPOLL_CTL_ADD, wake, &event) != 0 {
      let error = errno
      if wake >= 0 { close(wake) }
      close(epoll)
      return (-1, -1, error)
    }
    return (epoll, wake, 0)
  }

  /// The epoll instance, made now if it could not be made before (the loop's thread only).
  /// - Throws: `POSIXError` with the system's error (`.EMFILE`) if it still cannot be made.
  private func requireEpoll() throws -> Int32 {
    let epoll = epollDescriptor.load(ordering: .relaxed)
    if epoll >= 0 { return epoll }
    let made = Self.makeKernelObjects(failures: &injectedFailures)
    guard made.error == 0 else {
      throw POSIXError(POSIXErrorCode(rawValue: made.error) ?? .EMFILE)
    }
    wakeDescriptor.store(made.wake, ordering: .releasing)
    epollDescriptor.store(made.epoll, ordering: .releasing)
    return made.epoll
  }

  /// Directions waited for across all descriptors (see `waiting`).
  var waiterCount: Int { waiting.load(ordering: .relaxed) }

  /// Adds `change` to `waiting`: a load and a store, as only the loop's thread writes it.
  private func countWaiters(_ change: Int) {
    waiting.store(waiting.load(ordering: .relaxed) &+ change, ordering: .relaxed)
  }

  deinit {
    let wake = wakeDescriptor.load(ordering: .acquiring)
    if wake >= 0 { close(wake) }
    let epoll = epollDescriptor.load(ordering: .acquiring)
    if epoll >= 0 { close(epoll) }
    events.deallocate()
    readScratch?.deallocate()
  }

  /// A buffer of ``readBufferSize`` bytes for the loop's thread: a read receives into it and
  /// returns a copy of exactly what arrived, so its cost does not depend on how much it was
  /// allowed to read. Used between two suspensions only (a system call and a copy).
  var readBuffer: UnsafeMutableRawBufferPointer {
    if let readScratch { return readScratch }
    let buffer = UnsafeMutableRawBufferPointer.allocate(
      byteCount: Self.readBufferSize, alignment: 16)
    readScratch = buffer
    return buffer
  }

  // MARK: Testing

  /// How many tests make pollers fail on purpose now: while zero, a poller's creation does not
  /// look for an injected failure.
  private static let injections = Atomic<Int>(0)
  private static let injectionKey = "coroutines.poller.failingCreations"

  /// Runs `body` with every poller it creates on this thread (a loop's, a group's loops') unable
  /// to make its kernel objects, as if the process were out of descriptors, for its first
  /// `times` tries (the creation is the first, each wait's retry the next).
  static func failingCreation<R>(times: Int, _ body: () throws -> R) rethrows -> R {
    Thread.current.threadDictionary[injectionKey] = times
    injections.add(1, ordering: .relaxed)
    defer {
      injections.subtract(1, ordering: .relaxed)
      Thread.current.threadDictionary[injectionKey] = nil
    }
    return try body()
  }

  /// True when `fd` is in this poller's epoll set, as the kernel lists it (for tests).
  func watchesInKernel(_ fd: Int32) -> Bool {
    let epoll = epollDescriptor.load(ordering: .acquiring)
    guard epoll >= 0,
      let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(epoll)", encoding: .utf8)
    else { return false }
    return info.split(separator: "\n").contains {
      $0.hasPrefix("tfd: ")
        && $0.split(
          separator: " ", omittingEmptySubsequences: true
        ).dropFirst().first == "\(fd)"
    }
  }

  // MARK: Any thread

  /// Ends the loop's sleep in ``poll(timeout:)``, or the next one if it is not asleep yet.
  func wake() {
    let descriptor = wakeDescriptor.load(ordering: .acquiring)
    if descriptor >= 0 {
      var one: UInt64 = 1
      // EAGAIN means the counter is full, so a wake-up is pending anyway.
      _ = write(descriptor, &one, 8)
      return
    }
    // Without kernel objects the loop sleeps on the parker (see "Out of descriptors").
    guard let parker else { return }
    parker.withLock { wakePending = true }
    parker.signal()
  }

  /// Takes `fd`, an owned descriptor registered here, out of the epoll set, from any thread:
  /// it is moving to another loop's poller (see `OwnedDescriptor.beginWait(in:_:)`). Its slot
  /// here keeps the old registration number, which no later registration has, so the next wait
  /// here registers it afresh.
  func unregister(_ fd: Int32) {
    let epoll = epollDescriptor.load(ordering: .acquiring)
    if epoll >= 0 { _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil) }
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
  /// registered until it is closed (closing a descriptor takes it out of every epoll set) or
  /// moves to another poller.
  ///
  /// A number's file may be closed while waits on it are pending, and the number given to a
  /// new file: the kernel then drops the old file's registration, and would leave the new file
  /// unwatched while this poller believed it armed. So whenever a wait joins others, the kernel
  /// is asked (a change of a registration that no longer exists fails with ENOENT), and a
  /// registration that the kernel finds new while waits were pending tells the same: those
  /// waits' file was closed under them, and they end with `POSIXError(.EBADF)`, as a wait on a
  /// closed descriptor does. Every registration also carries a generation beside the number
  /// (Go's netpoller keeps such a sequence per descriptor), and events of an older one are
  /// dropped: the old file may live on elsewhere (a dup, a child) with its registration still
  /// armed, and its events must never wake the new file's waiters.
  ///
  /// - Throws: `POSIXError` when the kernel refuses the descriptor (`EBADF` for a closed one),
  ///   or when the epoll instance cannot be made (`EMFILE`).
  func register(
    _ fd: Int32, for events: CoIOEvents, owner: UInt64 = 0,
    _ resumer: CoroutineResumer<CoIOEvents>
  ) throws -> CoIOEvents? {
    let epoll = try requireEpoll()
    let index = Int(fd)
    if index >= waiters.count { grow(toHold: index) }
    if waiters[index].owner != owner {
      // Another owner's registration, left behind when it closed (the kernel dropped it then)
      // or moved to another poller, or a borrowed descriptor's: start afresh. Waits still
      // pending are checked by the kernel call below.
      waiters[index].owner = 0
      waiters[index].edges = []
      waiters[index].ends = []
      waiters[index].armed = 0
      waiters[index].inKernel = false
      if owner != 0 {
        let error = registerForEdges(epoll, fd, owner: owner)
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
    let joining = waiters[index].hasWaiters
    if events.contains(.readable) { waiters[index].readers.append(resumer) }
    if events.contains(.writable) { waiters[index].writers.append(resumer) }
    let error = owner != 0 ? 0 : rearm(epoll, fd, newcomer: resumer, joining: joining)
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
    let epoll = epollDescriptor.load(ordering: .relaxed)
    if waiters[index].wanted == 0, waiters[index].armed != 0 {
      // Nobody waits: take the descriptor out of the interest list, so that nothing stays
      // registered for a wait that is over.
      _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
      waiters[index].armed = 0
      waiters[index].inKernel = false
    } else {
      _ = rearm(epoll, fd)
    }
  }

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
      if waiters[index].wanted != 0 { _ = rearm(epollDescriptor.load(ordering: .relaxed), fd) }
    }
  }

  /// The `data` of a registration of `fd`: its number in the low half, a new generation in the
  /// high half, which `fd`'s slot takes once the kernel accepts it.
  private func newToken(for fd: Int32) -> (token: UInt64, generation: UInt32) {
    nextGeneration &+= 1
    return (UInt64(nextGeneration) << 32 | UInt64(UInt32(bitPattern: fd)), nextGeneration)
  }

  /// Registers an owned descriptor for the rest of its life here: both directions,
  /// edge-triggered, so that neither a wait nor its end costs a system call. Returns 0 or the
  /// system's error.
  private func registerForEdges(_ epoll: Int32, _ fd: Int32, owner: UInt64) -> Int32 {
    let error = addToKernel(
      epoll, fd,
      EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue,
      keeping: nil)
    if error == 0 { waiters[Int(fd)].owner = owner }
    return error
  }

  /// Arms a borrowed `fd` one-shot for exactly the directions waited for, adding it to the
  /// interest list if it is not there. `newcomer` is the resumer of a wait being registered,
  /// which goes on whatever file the number names now; `joining`, true when it joins pending
  /// waits, makes it ask the kernel even when nothing changes (see
  /// ``register(_:for:owner:_:)``). Returns 0 or the system's error.
  private func rearm(
    _ epoll: Int32, _ fd: Int32, newcomer: CoroutineResumer<CoIOEvents>? = nil,
    joining: Bool = false
  ) -> Int32 {
    let index = Int(fd)
    let wanted = waiters[index].wanted
    if wanted == waiters[index].armed, !joining { return 0 }
    let events = wanted | EPOLLONESHOT.rawValue
    if waiters[index].inKernel {
      var event = epoll_event()
      event.events = events
      let (token, generation) = newToken(for: fd)
      event.data.u64 = token
      if epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) == 0 {
        waiters[index].armed = wanted
        waiters[index].generation = generation
        return 0
      }
      guard errno == ENOENT else { return errno }
      // The file registered under this number was closed since (and the number perhaps
      // reused): the kernel dropped its registration with it, and the waits pending on it
      // are over. Only a joining wait, on whatever file the number names now, goes on.
      waiters[index].inKernel = false
      waiters[index].armed = 0
      endClosedWaits(index, keeping: newcomer)
      let wanted = waiters[index].wanted
      if wanted == 0 { return 0 }
      return addToKernel(epoll, fd, wanted | EPOLLONESHOT.rawValue, keeping: newcomer)
    }
    return addToKernel(epoll, fd, events, keeping: newcomer)
  }

  /// Adds `fd` to the interest list for `events` under a new generation (or, if the same file
  /// is there already under this number, changes its registration). Waits pending on the slot
  /// when the kernel had no registration for the file, except `keeping`'s, were for a file
  /// closed under them: they end with `POSIXError(.EBADF)`. Returns 0 or the system's error.
  private func addToKernel(
    _ epoll: Int32, _ fd: Int32, _ events: UInt32, keeping newcomer: CoroutineResumer<CoIOEvents>?
  ) -> Int32 {
    let index = Int(fd)
    var event = epoll_event()
    event.events = events
    let (token, generation) = newToken(for: fd)
    event.data.u64 = token
    if epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0 {
      endClosedWaits(index, keeping: newcomer)
    } else {
      // Registered already: the same file (a registration is the file and the number).
      guard errno == EEXIST, epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) == 0 else {
        return errno
      }
    }
    waiters[index].inKernel = true
    waiters[index].generation = generation
    // What the kernel has armed, which a later re-arm compares with what is wanted then.
    if events & EPOLLONESHOT.rawValue != 0 {
      waiters[index].armed = events & ~EPOLLONESHOT.rawValue
    }
    return 0
  }

  /// Ends with `POSIXError(.EBADF)` every wait on the slot but `newcomer`'s: their file is gone.
  private func endClosedWaits(_ index: Int, keeping newcomer: CoroutineResumer<CoIOEvents>?) {
    guard waiters[index].hasWaiters else { return }
    var ended = 0
    for reader in waiters[index].readers where reader !== newcomer {
      reader.resume(.failure(POSIXError(.EBADF)))
      ended += 1
    }
    for writer in waiters[index].writers where writer !== newcomer {
      if !waiters[index].readers.contains(where: { $0 === writer }) {
        writer.resume(.failure(POSIXError(.EBADF)))
      }
      ended += 1
    }
    waiters[index].readers.removeAll { $0 !== newcomer }
    waiters[index].writers.removeAll { $0 !== newcomer }
    countWaiters(-ended)
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
  /// The generation of the descriptor's current registration, beside its number in each
  /// event's `data`: an event of another generation is another file's (see `register`).
  var generation: UInt32 = 0
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

  /// True while some wait is pending.
  var hasWaiters: Bool { !readers.isEmpty || !writers.isEmpty }

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
