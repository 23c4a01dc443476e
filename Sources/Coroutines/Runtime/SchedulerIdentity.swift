import Dispatch
import Glibc

/// Which scheduler the calling code runs on, and how to name schedulers and threads in
/// diagnostics. Bound objects (``CoBound``) use it to catch calls from the wrong thread.
enum SchedulerIdentity {
  /// Whether the calling code runs on `scheduler` right now, or `nil` when that kind of
  /// scheduler cannot tell.
  ///
  /// A coroutine is on the scheduler it resumes on. Plain code is on a ``CoroutineLoop`` or a
  /// ``CoroutineTestLoop`` while that loop is being run on its thread, and on a `DispatchQueue`
  /// marked with ``mark(_:)`` while the queue (or a queue targeting it) runs it.
  static func isCurrent(_ scheduler: any CoroutineScheduler) -> Bool? {
    if let coroutine = Coroutine.current { return coroutine.scheduler === scheduler }
    switch scheduler {
    case let loop as CoroutineLoop: return CoroutineLoop.current === loop
    case let group as CoroutineLoopGroup: return group.isCurrent
    case let loop as CoroutineTestLoop: return CoroutineTestLoop.current === loop
    case let queue as DispatchQueue:
      return DispatchQueue.getSpecific(key: queueIdentityKey) == ObjectIdentifier(queue)
    default: return nil
    }
  }

  /// Lets ``isCurrent(_:)`` recognise `scheduler` if it is a `DispatchQueue`, by tagging the
  /// queue with its own identity under a key private to this library. Idempotent.
  static func mark(_ scheduler: any CoroutineScheduler) {
    guard let queue = scheduler as? DispatchQueue else { return }
    queue.setSpecific(key: queueIdentityKey, value: ObjectIdentifier(queue))
  }

  /// A scheduler as a person reads it: `DispatchQueue "db"`, `CoroutineLoop.main`,
  /// `CoroutineLoop 0x…`, or the scheduler's own description.
  static func describe(_ scheduler: any CoroutineScheduler) -> String {
    switch scheduler {
    case let queue as DispatchQueue: return "DispatchQueue \"\(queue.label)\""
    case let loop as CoroutineLoop:
      return loop === CoroutineLoop.main
        ? "CoroutineLoop.main" : "CoroutineLoop \(address(of: loop))"
    case let described as any CustomStringConvertible: return described.description
    default: return "\(type(of: scheduler)) \(address(of: scheduler))"
    }
  }

  /// The calling thread as a person reads it: `thread 4242 "worker"`, plus `(main)` on the
  /// process's first thread. Read from /proc, as glibc's `gettid` and `pthread_getname_np` are
  /// not visible to Swift; it runs only on the way to a diagnostic.
  static func describeCallingThread() -> String {
    let path = readLink("/proc/thread-self")  // "<pid>/task/<tid>"
    let id = path.split(separator: "/").last.map(String.init) ?? "\(pthread_self())"
    let name = readFile("/proc/thread-self/comm").trimmingSuffix("\n")
    let isMain = id == "\(getpid())"
    return "thread \(id)" + (name.isEmpty ? "" : " \"\(name)\"") + (isMain ? " (main)" : "")
  }

  private static func readLink(_ path: String) -> String {
    var buffer = [UInt8](repeating: 0, count: 256)
    let count = buffer.withUnsafeMutableBufferPointer { bytes in
      bytes.withMemoryRebound(to: CChar.self) { readlink(path, $0.baseAddress!, $0.count) }
    }
    return count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : ""
  }

  private static func readFile(_ path: String) -> String {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { return "" }
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 256)
    let count = read(descriptor, &buffer, buffer.count)
    return count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : ""
  }

  private static func address(of object: AnyObject) -> String {
    "0x" + String(UInt(bitPattern: ObjectIdentifier(object)), radix: 16)
  }
}

/// The key under which ``SchedulerIdentity/mark(_:)`` tags a queue with its own identity.
private let queueIdentityKey = DispatchSpecificKey<ObjectIdentifier>()

extension String {
  fileprivate func trimmingSuffix(_ suffix: String) -> String {
    hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
  }
}
