import Foundation
import Synchronization

/// A descriptor that a stream or listener owns: closed exactly once, when its owner is closed
/// (or released) and no call is using it any more.
///
/// Closing while a call is inside a system call on the descriptor must not free its number for
/// reuse: the call could then read from, or write to, whatever file the process opens next
/// under that number. So calls ``enter(_:)`` and ``leave()`` around their use, ``close()`` only
/// marks the descriptor and wakes the calls that wait for it, and the last one out closes it.
final class OwnedDescriptor: Sendable {
  let fd: Int32
  private static let nextRegistration = Atomic<UInt64>(0)
  private let state = Mutex(State())

  private struct State {
    var closed = false
    var users = 0
    /// The waits in progress on the descriptor, all in `home`'s poller, which ``close()`` ends
    /// with `POSIXError(.EBADF)`.
    var waiters: [DescriptorWaiter] = []
    /// The loop whose poller has the descriptor registered, if any (see ``beginWait(in:_:)``).
    var home: CoroutineLoop?
    /// The registration number in `home`'s poller: a number no other registration of the
    /// process has had, so that a poller tells its registration of `fd` from one left behind
    /// by an earlier owner of the number, or by this one before it moved away.
    var registration: UInt64 = 0
  }

  /// Where a wait on the descriptor goes (see ``beginWait(in:_:)``).
  enum WaitPlace {
    /// In the asking loop's poller, under `registration`; `leaving` is the poller the
    /// descriptor must first be taken out of.
    case here(registration: UInt64, leaving: CoroutineLoop?)
    /// In `home`'s poller, where other waits on the descriptor are in progress; counted as
    /// one of home's coroutines until the wait has left it.
    case elsewhere(home: CoroutineLoop)
    /// Nowhere: the descriptor is closed.
    case closed
  }

  init(_ fd: Int32) { self.fd = fd }

  /// A descriptor that is closed from the start and owns none: the stand-in of a stream or
  /// listener whose transport is simulated.
  static func none() -> OwnedDescriptor {
    let descriptor = OwnedDescriptor(-1)
    descriptor.state.withLock { $0.closed = true }
    return descriptor
  }

  deinit {
    // Released without close(): nobody can be using it, as every call holds its owner.
    if !state.withLock({ $0.closed }) { Glibc.close(fd) }
  }

  /// Marks the start of a call that uses the descriptor; throws `POSIXError(.EBADF)` once it is
  /// closed. Every successful `enter` is paired with a ``leave()``.
  func enter() throws -> Int32 {
    let open = state.withLock { state -> Bool in
      if state.closed { return false }
      state.users += 1
      return true
    }
    guard open else { throw POSIXError(.EBADF) }
    return fd
  }

  /// Marks the end of a call; the last one out of a closed descriptor closes it.
  func leave() {
    let last = state.withLock { state -> Bool in
      state.users -= 1
      return state.closed && state.users == 0
    }
    if last { Glibc.close(fd) }
  }

  /// Runs `body` with the descriptor between ``enter()`` and ``leave()``.
  @inline(__always)
  func use<R>(_ body: (Int32) throws -> R) throws -> R {
    let fd = try enter()
    defer { leave() }
    return try body(fd)
  }

  /// True once ``close()`` was called.
  var isClosed: Bool { state.withLock { $0.closed } }

  /// Records a wait on the descriptor by `waiter`, about to register in `loop`'s poller, and
  /// says where it goes.
  ///
  /// An owned descriptor is registered in one poller at a time: registered edge-triggered for
  /// its life, in every poller it ever waited in, it would stay in each (a group coroutine
  /// moves between loops), and each would be woken by its edges for nothing. So its waits go to
  /// the poller it is registered in, its home. A wait from another loop moves it there when no
  /// wait is in progress at home: it is taken out of the old epoll set (from any thread, which
  /// the kernel allows) under a new registration number, so the old poller's record of it no
  /// longer matches and is started afresh if it ever comes back. While waits are in progress at
  /// home (a reader parked on one loop, a writer on another), the new wait goes there too,
  /// rather than take the registration from under them: like NIO's channels, which stay on
  /// their event loop, the descriptor stays, and the coroutine moves to it for the wait.
  func beginWait(in loop: CoroutineLoop, _ waiter: DescriptorWaiter) -> WaitPlace {
    state.withLock { state in
      if state.closed { return .closed }
      if state.home === loop {
        state.waiters.append(waiter)
        return .here(registration: state.registration, leaving: nil)
      }
      if let home = state.home, !state.waiters.isEmpty {
        // The coming wait counts as one of home's coroutines until it has left it again (see
        // `waitForDescriptor`): a loop that could end (one of `CoroutineLoop.run`) keeps
        // running for it. Home runs now, as a wait of its own is in progress there.
        home.coroutineCreated()
        return .elsewhere(home: home)
      }
      let leaving = state.home
      state.home = loop
      state.registration = Self.nextRegistration.add(1, ordering: .relaxed).newValue
      state.waiters.append(waiter)
      return .here(registration: state.registration, leaving: leaving)
    }
  }

  /// Forgets a wait that ended.
  func endWait(_ waiter: DescriptorWaiter) {
    state.withLock { state in
      if let index = state.waiters.firstIndex(where: { $0.isSame(as: waiter) }) {
        state.waiters.remove(at: index)
      }
    }
  }

  /// Closes the descriptor once no call uses it, and ends every wait on it with
  /// `POSIXError(.EBADF)`. Calling it again does nothing.
  func close() {
    let (waiters, closeNow) = state.withLock { state in
      if state.closed { return ([DescriptorWaiter](), false) }
      state.closed = true
      let waiters = state.waiters
      state.waiters = []
      // Closing takes the descriptor out of its poller's set; the loop need not stay.
      state.home = nil
      return (waiters, state.users == 0)
    }
    for waiter in waiters { waiter.resume(.failure(POSIXError(.EBADF))) }
    if closeNow { Glibc.close(fd) }
  }
}
