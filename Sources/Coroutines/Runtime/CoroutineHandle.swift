/// The coroutine that runs some code, as a value: for logging and diagnostics.
///
/// ```swift
/// co_launch(name: "refresh") {
///   if let me = CoroutineHandle.current {
///     log("\(me.name ?? "?") on \(me.scheduler), cancelled: \(me.isCancelled)")
///   }
/// }
/// ```
///
/// Two handles are equal when they name the same coroutine. A handle keeps the coroutine's
/// small record alive (not its stack), so its properties stay readable after the coroutine
/// has finished.
public struct CoroutineHandle: Hashable, Sendable, CustomStringConvertible {
  let coroutine: Coroutine
  /// The coroutine's `home`, read while it runs: a finished coroutine may no longer hold it.
  private let home: any CoroutineScheduler

  init(_ coroutine: Coroutine) {
    self.coroutine = coroutine
    self.home = coroutine.home
  }

  /// The coroutine running this code (a generator's body runs in a coroutine of its own);
  /// nil outside any coroutine.
  public static var current: CoroutineHandle? {
    Coroutine.current.map(CoroutineHandle.init)
  }

  /// Identifies the coroutine: unique among coroutines whose record is alive (as long as a
  /// handle holds it, at least).
  public var id: ObjectIdentifier { ObjectIdentifier(coroutine) }

  /// The name given at launch, if any.
  public var name: String? { coroutine.name }

  /// True once the coroutine has been cancelled: its next suspension throws
  /// `CancellationError` (see ``co_isActive()``).
  public var isCancelled: Bool { coroutine.isCancelled }

  /// True once the coroutine has finished and left its stack.
  public var isFinished: Bool { coroutine.currentState == .finished }

  /// The scheduler the coroutine belongs to and resumes on (while it hops for
  /// ``co_await(on:_:)``, it runs elsewhere for a while, then comes back here).
  public var scheduler: any CoroutineScheduler { home }

  /// The coroutine's name (or "unnamed") and its address, for a log line.
  public var description: String {
    let address = String(UInt(bitPattern: id), radix: 16)
    return "coroutine \(name.map { "\"\($0)\"" } ?? "(unnamed)") 0x\(address)"
  }

  /// True when both handles name the same coroutine.
  public static func == (left: CoroutineHandle, right: CoroutineHandle) -> Bool {
    left.coroutine === right.coroutine
  }

  /// Hashes the coroutine's identity.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(id)
  }
}
