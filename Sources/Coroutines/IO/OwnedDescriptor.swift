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
  /// A number no other owned descriptor of the process has had: pollers tell by it whether
  /// their registration of `fd` is this owner's or one left behind by an earlier owner of the
  /// same number.
  let registration = OwnedDescriptor.nextRegistration.add(1, ordering: .relaxed).newValue
  private static let nextRegistration = Atomic<UInt64>(0)
  private let state = Mutex(State())

  private struct State {
    var closed = false
    var users = 0
    /// The waits in progress on the descriptor, which ``close()`` ends with `EBADF`.
    var waiters: [CoroutineResumer<CoIOEvents>] = []
  }

  init(_ fd: Int32) { self.fd = fd }

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

  /// Records a wait on the descriptor; false, recording nothing, if it is already closed.
  func attach(_ waiter: CoroutineResumer<CoIOEvents>) -> Bool {
    state.withLock { state in
      if state.closed { return false }
      state.waiters.append(waiter)
      return true
    }
  }

  /// Forgets a wait that ended.
  func detach(_ waiter: CoroutineResumer<CoIOEvents>) {
    state.withLock { state in
      if let index = state.waiters.firstIndex(where: { $0 === waiter }) {
        state.waiters.remove(at: index)
      }
    }
  }

  /// Closes the descriptor once no call uses it, and ends every wait on it with
  /// `POSIXError(.EBADF)`. Calling it again does nothing.
  func close() {
    let (waiters, closeNow) = state.withLock { state in
      if state.closed { return ([CoroutineResumer<CoIOEvents>](), false) }
      state.closed = true
      let waiters = state.waiters
      state.waiters = []
      return (waiters, state.users == 0)
    }
    for waiter in waiters { waiter.resume(.failure(POSIXError(.EBADF))) }
    if closeNow { Glibc.close(fd) }
  }
}
