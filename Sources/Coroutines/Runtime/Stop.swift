/// Stops the program with `message` when `condition` is false, in every build configuration.
///
/// Swift's `precondition` drops its message in optimised builds (the process ends with only
/// "Illegal instruction"), so a user who passed a bad value to a release-built program would
/// never learn which call refused it. Every check that names the call and the value goes
/// through this.
@inlinable @inline(__always)
func coPrecondition(
  _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
  file: StaticString = #fileID, line: UInt = #line
) {
  if _slowPath(!condition()) { coStop(message(), file: file, line: line) }
}

/// Stops the program with `message`, in every build configuration (see ``coPrecondition``).
@usableFromInline @inline(never)
func coStop(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
  fatalError(message, file: file, line: line)
}
