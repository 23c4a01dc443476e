import CUContext
import Glibc

/// A value bound per coroutine, like `TaskLocal` for tasks: ``withValue(_:_:)`` binds it for
/// the code it runs, ``value`` reads the innermost binding.
///
/// ```swift
/// let requestID = CoLocal(default: "none")
/// let seen = try CoroutineLoop.run { () -> [String] in
///   try requestID.withValue("r-42") {
///     let child = co_launch { requestID.value }  // inherited: "r-42"
///     try co_delay(0.01)  // still "r-42" after the suspension
///     return [requestID.value, try co_await(child)]
///   }
/// }
/// // seen == ["r-42", "r-42"]
/// ```
///
/// - A binding belongs to the coroutine, not to the thread: it survives suspensions and moves
///   between threads, and other coroutines running on the same thread meanwhile do not see it.
/// - A coroutine launched inside ``withValue(_:_:)`` starts with the bindings of its launcher, as
///   a task inherits task-locals; so does one launched detached or in a ``CoScope``, which
///   leave the launcher's cancellation and lifetime, not its context.
/// - Outside any coroutine the binding belongs to the calling thread, and coroutines launched
///   there inherit it.
/// - Reading allocates nothing; a binding costs one small allocation.
public final class CoLocal<T: Sendable>: Sendable {
  @usableFromInline let defaultValue: T

  /// Creates a coroutine-local whose ``value`` is `default` wherever it is not bound.
  public init(default defaultValue: T) {
    self.defaultValue = defaultValue
  }

  /// The value of the innermost ``withValue(_:_:)`` of the running coroutine (or, outside any
  /// coroutine, of the calling thread), else the default.
  @inlinable
  public var value: T {
    guard let binding = CoLocalBinding.innermost(of: self) else { return defaultValue }
    return binding._withUnsafeGuaranteedRef { unsafeDowncast($0, to: CoLocalValue<T>.self).value }
  }

  /// Runs `body` with `value` bound: ``value`` returns it inside `body`, in this coroutine and in
  /// the coroutines launched inside `body`; the previous binding comes back afterwards.
  ///
  /// - Returns: What `body` returns.
  /// - Throws: What `body` throws.
  public func withValue<R>(_ value: T, _ body: () throws -> R) rethrows -> R {
    let saved = CoLocalBinding.current
    CoLocalBinding.current = CoLocalValue(key: self, value: value, next: saved)
    defer { CoLocalBinding.current = saved }
    return try body()
  }
}

/// A binding of a `CoLocal<T>` to a value.
@usableFromInline
final class CoLocalValue<T: Sendable>: CoLocalBinding, @unchecked Sendable {  // immutable
  @usableFromInline let value: T

  init(key: AnyObject, value: T, next: CoLocalBinding?) {
    self.value = value
    super.init(key: key, next: next)
  }
}
