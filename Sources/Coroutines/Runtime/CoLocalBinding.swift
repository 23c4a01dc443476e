import CUContext
import Glibc

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
