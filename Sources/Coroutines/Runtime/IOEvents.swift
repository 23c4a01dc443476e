/// What a coroutine waits for on a file descriptor, and what ``co_wait(fd:for:timeout:)``
/// reports as ready.
///
/// An error or a hang-up on the descriptor reports both: the read or write that the caller
/// tries next returns the error or the end of stream.
public struct CoIOEvents: OptionSet, Sendable, Hashable {
  /// The bits: 1 for readable, 2 for writable.
  public let rawValue: UInt8

  /// Creates a set of events from its raw bits.
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// Data can be read without blocking (or the peer closed its side, or an error is pending).
  public static let readable = CoIOEvents(rawValue: 1)
  /// Data can be written without blocking (or an error is pending).
  public static let writable = CoIOEvents(rawValue: 2)
}
