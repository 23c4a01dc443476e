import Foundation

/// Suspends the coroutine until `fd` is ready for any of `events`, and returns the events that
/// are ready; never blocks the thread.
///
/// Try the system call first and wait only when it says `EAGAIN`: the wait reports readiness,
/// and the call that follows may still find nothing (another reader was faster).
///
/// ```swift
/// var byte: UInt8 = 0
/// while read(fd, &byte, 1) < 0 && errno == EAGAIN {
///   _ = try co_wait(fd: fd, for: .readable)
/// }
/// ```
///
/// A coroutine on a ``CoroutineLoop`` waits in that loop's own poller; a coroutine on any other
/// scheduler (a `DispatchQueue`) waits in a shared poller thread and resumes on its own
/// scheduler. Whichever way the wait ends, nothing is left registered for `fd` afterwards.
/// Several coroutines may wait for one descriptor: all of them wake when it is ready.
///
/// - Parameters:
///   - fd: An open descriptor, usually non-blocking. A regular file is always ready.
///   - events: ``CoIOEvents/readable``, ``CoIOEvents/writable``, or both.
///   - timeout: Seconds to wait at most; nil waits for as long as it takes, zero only looks.
///     Negative or NaN stops the program with a message naming the value.
/// - Throws: ``CoroutineError/timedOut`` past the timeout; `CancellationError` at once if the
///   coroutine is cancelled; `POSIXError(.EBADF)` for a descriptor below zero or not open,
///   also when it is closed while the wait is pending and its number is given to another file;
///   `POSIXError(.EMFILE)` when the process is out of descriptors and the loop has not yet
///   made its poller (a later wait tries again); ``CoroutineError/notInCoroutine`` outside a
///   coroutine.
public func co_wait(fd: Int32, for events: CoIOEvents, timeout: Double? = nil) throws
  -> CoIOEvents
{
  try waitForDescriptor(fd, events, timeout: timeout, call: "co_wait(fd:for:timeout:)")
}

/// Checks a timeout given to an I/O call, naming `call` in the message if it is NaN or negative.
func checkedTimeout(_ timeout: Double?, in call: StaticString) -> Double? {
  guard let timeout else { return nil }
  coPrecondition(!timeout.isNaN, "\(call): the timeout is NaN")
  coPrecondition(timeout >= 0, "\(call): the timeout \(timeout) is negative")
  return timeout
}

/// `co_wait`, also for the TCP types: `owner`, if given, is told of the wait so that closing it
/// ends the wait with `EBADF`. `call` names the public entry point in messages.
func waitForDescriptor(
  _ fd: Int32, _ events: CoIOEvents, timeout: Double?, call: StaticString,
  owner: OwnedDescriptor? = nil
) throws -> CoIOEvents {
  let coroutine = try Coroutine.requireCurrent()
  coPrecondition(!events.isEmpty, "\(call): no events to wait for")
  let timeout = checkedTimeout(timeout, in: call)
  guard fd >= 0 else { throw POSIXError(.EBADF) }
  if coroutine.isCancelled { throw CancellationError() }
  if timeout == 0 { return try readyNow(fd, events) }
  var place: CoroutineLoop
  if let loop = coroutine.loopRunningHere {
    do {
      // Pinned: the wait's registration belongs to this loop's poller, which only its own
      // thread may touch, so a group coroutine must resume here.
      return try coroutine.pinned {
        try loop.wait(
          for: fd, events, coroutine: coroutine, timeout: timeout, timers: coroutine.scheduler,
          owner: owner)
      }
    } catch let elsewhere as WaitsElsewhere {
      place = elsewhere.home
    }
  } else {
    // Any other scheduler: wait on the shared poller's thread, keeping the timeout on the
    // coroutine's own clock (a test loop's virtual one, say), then come back.
    let origin = coroutine.scheduler
    let shared = CoroutineLoop.sharedPoller
    do {
      return try co_await(on: shared) {
        try shared.wait(
          for: fd, events, coroutine: coroutine, timeout: timeout, timers: origin, owner: owner)
      }
    } catch let elsewhere as WaitsElsewhere {
      place = elsewhere.home
    }
  }
  // An owned descriptor with waits in progress in another loop's poller: wait there, and come
  // back (see `OwnedDescriptor.beginWait(in:_:)`). It may have moved again meanwhile.
  let timers = coroutine.scheduler
  while true {
    let home = place
    // Counted as one of home's coroutines from `OwnedDescriptor.beginWait` until it has left:
    // home may be a loop of `CoroutineLoop.run`, which would otherwise end once its own
    // coroutines are done, with this wait still in its poller.
    defer { home.coroutineFinished() }
    do {
      return try hopping(to: home) {
        try coroutine.pinned {
          try home.wait(
            for: fd, events, coroutine: coroutine, timeout: timeout, timers: timers, owner: owner)
        }
      }
    } catch let elsewhere as WaitsElsewhere {
      place = elsewhere.home
    }
  }
}

/// Thrown inside `CoroutineLoop.wait` for an owned descriptor whose waits are in another
/// loop's poller, `home`: the wait goes there.
private struct WaitsElsewhere: Error {
  let home: CoroutineLoop
}

/// The events `fd` is ready for now, without waiting (`poll` with no timeout); throws
/// ``CoroutineError/timedOut`` if none.
private func readyNow(_ fd: Int32, _ events: CoIOEvents) throws -> CoIOEvents {
  var entry = pollfd(
    fd: fd,
    events: Int16(
      (events.contains(.readable) ? POLLIN : 0) | (events.contains(.writable) ? POLLOUT : 0)),
    revents: 0)
  let count = poll(&entry, 1, 0)
  if count < 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL) }
  if entry.revents & Int16(POLLNVAL) != 0 { throw POSIXError(.EBADF) }
  var ready: CoIOEvents = []
  if entry.revents & Int16(POLLERR | POLLHUP) != 0 { ready = [.readable, .writable] }
  if entry.revents & Int16(POLLIN) != 0 { ready.insert(.readable) }
  if entry.revents & Int16(POLLOUT) != 0 { ready.insert(.writable) }
  guard !ready.isEmpty else { throw CoroutineError.timedOut }
  return ready
}

extension CoroutineLoop {
  /// Parks `coroutine`, running on this loop's thread, until `fd` is ready, the timeout (on
  /// `timers`' clock) passes, the coroutine is cancelled or `owner` is closed; then unregisters
  /// whatever is left. Throws `WaitsElsewhere` when `owner`'s waits belong to another loop.
  func wait(
    for fd: Int32, _ events: CoIOEvents, coroutine: Coroutine, timeout: Double?,
    timers: any CoroutineScheduler, owner: OwnedDescriptor?
  ) throws -> CoIOEvents {
    var registered: DescriptorWaiter?
    var recorded: DescriptorWaiter?
    var timer: (any CoroutineTimer)?
    defer {
      timer?.cancel()
      if let registered { poller.forget(fd, registered) }
      if let recorded { owner?.endWait(recorded) }
    }
    let reason: CoroutineWaitReason =
      events.contains(.readable) ? .readable(fd) : .writable(fd)
    let delivered = try coroutine.waitForDelivery(for: reason) { generation, slot in
      let waiter = DescriptorWaiter(coroutine: coroutine, generation: generation, slot: slot)
      var registration: UInt64 = 0
      if let owner {
        switch owner.beginWait(in: self, waiter) {
        case .closed:
          waiter.resume(.failure(POSIXError(.EBADF)))
          return
        case .elsewhere(let home):
          waiter.resume(.failure(WaitsElsewhere(home: home)))
          return
        case .here(let number, let leaving):
          recorded = waiter
          registration = number
          leaving?.poller.unregister(fd)
        }
      }
      do {
        if let ready = try poller.register(fd, for: events, owner: registration, waiter) {
          waiter.resume(.success(ready))
          return
        }
      } catch {
        waiter.resume(.failure(error))
        return
      }
      registered = waiter
      if let timeout {
        timer = timers.schedule(after: timeout) {
          waiter.resume(.failure(CoroutineError.timedOut))
        }
      }
    }
    guard let delivered else { throw CancellationError() }
    return try delivered.get()
  }
}
