import CLinux

/// Who waits for one descriptor, and what the kernel has armed for it.
struct DescriptorWaiters {
  /// The waits for readable and for writable (a wait for both is in both); usually one each.
  var readers: [DescriptorWaiter] = []
  var writers: [DescriptorWaiter] = []
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

/// One coroutine's wait for a descriptor, as its poller and the descriptor's owner keep it: a
/// value, since a socket call that finds nothing to read parks once per request in a server,
/// and a wait that allocated would cost a `malloc` and a `free` each time.
typealias DescriptorWaiter = CoroutineWaiter<CoIOEvents>
