#if canImport(Glibc)
  import Glibc
#endif

/// Runs a body on `count` new POSIX threads and joins them, stopping at the first thread the
/// system refuses rather than retrying.
enum ThreadRunner {
  private final class Job {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
  }

  /// Starts up to `count` threads with `stackSize`-byte stacks running `body(index)`, then
  /// joins every thread that started. Returns how many started, and the `errno` of the first
  /// refusal if there was one.
  static func run(
    count: Int, stackSize: Int, afterStarting: () -> Void = {},
    _ body: @escaping @Sendable (Int) -> Void
  ) -> (started: Int, refusal: Int32?) {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, stackSize)
    var threads: [pthread_t] = []
    threads.reserveCapacity(count)
    var refusal: Int32?
    for index in 0..<count {
      let job = Unmanaged.passRetained(Job { body(index) }).toOpaque()
      var thread = pthread_t()
      let status = pthread_create(
        &thread, &attributes,
        { raw in
          Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue().body()
          return nil
        }, job)
      if status != 0 {
        Unmanaged<Job>.fromOpaque(job).release()
        refusal = status
        break
      }
      threads.append(thread)
    }
    afterStarting()
    for thread in threads { pthread_join(thread, nil) }
    return (threads.count, refusal)
  }
}
