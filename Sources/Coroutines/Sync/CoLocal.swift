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

/// One binding of a coroutine-local: an immutable list from the innermost binding out, shared
/// between a coroutine and the children that inherited it.
@usableFromInline
class CoLocalBinding: @unchecked Sendable {  // immutable once made; values are Sendable
  /// The ``CoLocal`` bound, held strongly so that its address is never reused while a binding
  /// names it.
  final let key: AnyObject
  final let next: CoLocalBinding?

  init(key: AnyObject, next: CoLocalBinding?) {
    self.key = key
    self.next = next
  }

  /// The bindings of the running coroutine, or, outside any coroutine, of the calling thread.
  /// Read afresh through a call into C each time: a coroutine may have moved threads since.
  static var current: CoLocalBinding? {
    get {
      if let pointer = cu_tls_current_coroutine() {
        return Unmanaged<Coroutine>.fromOpaque(pointer)._withUnsafeGuaranteedRef {
          $0.locals.map { unsafeDowncast($0, to: CoLocalBinding.self) }
        }
      }
      return threadBindings
    }
    set {
      if let pointer = cu_tls_current_coroutine() {
        Unmanaged<Coroutine>.fromOpaque(pointer)._withUnsafeGuaranteedRef { $0.locals = newValue }
      } else {
        threadBindings = newValue
      }
    }
  }

  /// The innermost binding of `key` in the running coroutine (or, outside any, the calling
  /// thread), unretained: the coroutine's record holds the list, and nothing can change it
  /// before the caller, running on that coroutine, has read the value.
  @usableFromInline
  static func innermost(of key: AnyObject) -> Unmanaged<CoLocalBinding>? {
    guard let pointer = cu_tls_current_coroutine() else { return innermostOnThread(of: key) }
    return Unmanaged<Coroutine>.fromOpaque(pointer)._withUnsafeGuaranteedRef { coroutine in
      guard let locals = coroutine.locals else { return nil }
      return find(
        key, from: Unmanaged.passUnretained(unsafeDowncast(locals, to: CoLocalBinding.self)))
    }
  }

  @inline(__always)
  private static func find(
    _ key: AnyObject, from first: Unmanaged<CoLocalBinding>
  ) -> Unmanaged<CoLocalBinding>? {
    var node = first
    while true {
      let next: Unmanaged<CoLocalBinding>?? = node._withUnsafeGuaranteedRef { binding in
        if binding.key === key { return .none }
        return .some(binding.next.map { Unmanaged.passUnretained($0) })
      }
      guard let next else { return node }
      guard let next else { return nil }
      node = next
    }
  }

  @inline(never)
  private static func innermostOnThread(of key: AnyObject) -> Unmanaged<CoLocalBinding>? {
    guard let pointer = pthread_getspecific(threadKey) else { return nil }
    return find(key, from: Unmanaged<CoLocalBinding>.fromOpaque(pointer))
  }

  /// What a coroutine launched now inherits: the launcher's bindings.
  @usableFromInline
  static func inherited() -> AnyObject? { current }

  /// The calling thread's bindings, outside coroutines: a pthread key holding a retained
  /// reference.
  private static var threadBindings: CoLocalBinding? {
    get {
      guard let pointer = pthread_getspecific(threadKey) else { return nil }
      return Unmanaged<CoLocalBinding>.fromOpaque(pointer).takeUnretainedValue()
    }
    set {
      let old = pthread_getspecific(threadKey)
      pthread_setspecific(threadKey, newValue.map { Unmanaged.passRetained($0).toOpaque() })
      if let old { Unmanaged<CoLocalBinding>.fromOpaque(old).release() }
    }
  }

  private static let threadKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { pointer in
      if let pointer { Unmanaged<CoLocalBinding>.fromOpaque(pointer).release() }
    }
    coPrecondition(status == 0, "CoLocal: pthread_key_create failed with \(status)")
    return key
  }()
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
