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
  let epollDescriptor: Atomic<Int32>
  /// The eventfd other threads write to wake the loop; level-triggered, read back once woken.
  /// -1 while the epoll instance could not be made; written once, read by wakers.
  let wakeDescriptor: Atomic<Int32>
  /// Where the loop sleeps while the kernel objects could not be made: a condition variable,
  /// with `wakePending` under its lock. Nil when they were made at once.
  let parker: ConditionLock?
  var wakePending = false
  /// Creations still to fail on purpose (see ``failingCreation(times:_:)``); loop thread only.
  private var injectedFailures: Int
  /// Waiters by descriptor number: descriptors are small and dense, so an array indexed by them
  /// finds a waiter without hashing.
  var waiters: [DescriptorWaiters] = []
  /// Directions waited for across all descriptors: while it is zero, the loop never polls
  /// without sleeping. Written only by the loop's thread; atomic so that tests and diagnostics
  /// may read it from others.
  private let waiting = Atomic<Int>(0)
  /// The generation stamped into the next registration (see `DescriptorWaiters.generation`).
  var nextGeneration: UInt32 = 0
  let events: UnsafeMutablePointer<epoll_event>
  static let eventBatch: Int32 = 256
  /// The `data` of the wake-up descriptor's events: no descriptor has the number in its low
  /// half (-1), so no registration's token is this.
  static let wakeToken = UInt64.max
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
  func requireEpoll() throws -> Int32 {
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
  func countWaiters(_ change: Int) {
    waiting.store(waiting.load(ordering: .relaxed) &+ change, ordering: .relaxed)
  }

  deinit {
    // A wait still registered when its poller goes has nothing left to wake it.
    for slot in waiters where slot.hasWaiters {
      for waiter in slot.readers + slot.writers { waiter.abandon() }
    }
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
}

/// `strerror(errno)` with the number, for messages.
func errnoDescription(_ code: Int32 = errno) -> String {
  "\(String(cString: strerror(code))), errno \(code)"
}
