import Foundation

/// The error of the system call that just failed, as Foundation's `POSIXError`.
func lastPOSIXError() -> POSIXError {
  POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
}

/// Sets an integer socket option, throwing the system's error.
func setSocketOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws {
  var value = value
  if setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) != 0 {
    throw lastPOSIXError()
  }
}

/// A deadline on the monotonic clock for a call that may wait several times (a `write` of
/// many bytes, a `connect` trying several addresses): each wait gets what is left.
struct CallDeadline {
  private let end: UInt64?

  init(_ timeout: Double?) {
    end = timeout.map { monotonicNanoseconds() &+ nanoseconds(fromSeconds: $0, in: "timeout") }
  }

  /// Seconds left (zero once passed), or nil for no deadline.
  var remaining: Double? {
    guard let end else { return nil }
    let now = monotonicNanoseconds()
    return now >= end ? 0 : Double(end - now) / 1e9
  }
}
