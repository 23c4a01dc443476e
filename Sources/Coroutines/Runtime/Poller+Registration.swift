import CLinux
import Foundation

/// How a poller registers the descriptors its loop's coroutines wait on, one-shot for a borrowed
/// descriptor and edge-triggered for an owned one, and forgets them when their waits end.
extension Poller {
  // MARK: The loop's thread

  /// Registers `waiter` to be resumed with the ready events once `fd` is ready for `events`
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
    _ waiter: DescriptorWaiter
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
    if events.contains(.readable) { waiters[index].readers.append(waiter) }
    if events.contains(.writable) { waiters[index].writers.append(waiter) }
    let error = owner != 0 ? 0 : rearm(epoll, fd, newcomer: waiter, joining: joining)
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

  /// Takes `waiter` off `fd` if it is still registered there (its wait ended some other way:
  /// a timeout, cancellation, a close) and disarms a borrowed descriptor nobody waits for.
  func forget(_ fd: Int32, _ waiter: DescriptorWaiter) {
    let index = Int(fd)
    guard index < waiters.count else { return }
    var removed = 0
    if let position = waiters[index].readers.firstIndex(where: { $0.isSame(as: waiter) }) {
      waiters[index].readers.remove(at: position)
      removed += 1
    }
    if let position = waiters[index].writers.firstIndex(where: { $0.isSame(as: waiter) }) {
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
  /// interest list if it is not there. `newcomer` is the waiter of a wait being registered,
  /// which goes on whatever file the number names now; `joining`, true when it joins pending
  /// waits, makes it ask the kernel even when nothing changes (see
  /// ``register(_:for:owner:_:)``). Returns 0 or the system's error.
  func rearm(
    _ epoll: Int32, _ fd: Int32, newcomer: DescriptorWaiter? = nil,
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
    _ epoll: Int32, _ fd: Int32, _ events: UInt32, keeping newcomer: DescriptorWaiter?
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
  private func endClosedWaits(_ index: Int, keeping newcomer: DescriptorWaiter?) {
    guard waiters[index].hasWaiters else { return }
    var ended = 0
    func isNewcomer(_ waiter: DescriptorWaiter) -> Bool { newcomer?.isSame(as: waiter) ?? false }
    for reader in waiters[index].readers where !isNewcomer(reader) {
      reader.resume(.failure(POSIXError(.EBADF)))
      ended += 1
    }
    for writer in waiters[index].writers where !isNewcomer(writer) {
      if !waiters[index].readers.contains(where: { $0.isSame(as: writer) }) {
        writer.resume(.failure(POSIXError(.EBADF)))
      }
      ended += 1
    }
    waiters[index].readers.removeAll { !isNewcomer($0) }
    waiters[index].writers.removeAll { !isNewcomer($0) }
    countWaiters(-ended)
  }

  private func grow(toHold index: Int) {
    let count = max(index + 1, waiters.count * 2, 64)
    waiters.append(
      contentsOf: repeatElement(DescriptorWaiters(), count: count - waiters.count))
  }
}
