import CUContext

/// The mechanism that moves the processor between a coroutine's stack and its resumer's.
///
/// Both backends keep a suspended coroutine's registers in the same glibc `ucontext_t`, and
/// every API behaves the same on either; they differ in what one switch costs:
///
/// - ``ucontext``: glibc's `swapcontext`. Portable, and it saves and restores the signal mask,
///   which takes a system call on every switch (about half a microsecond per round trip).
/// - ``fast``: a register-only switch for x86_64 that saves exactly what the System V ABI
///   obliges a called function to preserve (rbx, rbp, r12–r15, the stack pointer, the resume
///   address, MXCSR and the x87 control word) and skips the system call. The signal mask stays
///   with the thread, as it does for any function call.
///
/// The backend is chosen once, when the program loads, from the `COROUTINES_BACKEND`
/// environment variable (`ucontext` or `fast`); unset or empty, it is ``fast`` on x86_64 and
/// ``ucontext`` elsewhere. Asking for `fast` where it does not exist prints a note and uses
/// ``ucontext``. Any other value stops the program at load time with a message naming it, so a
/// typo never silently tests or measures the wrong switch.
///
/// ```sh
/// COROUTINES_BACKEND=ucontext swift test
/// ```
public enum CoroutineBackend: String, Sendable, CaseIterable {
  /// glibc's `swapcontext`: portable, saves the signal mask with a system call per switch.
  case ucontext
  /// The register-only switch (x86_64): no system call, the signal mask stays with the thread.
  case fast

  /// The environment variable read at start-up to choose the backend.
  public static let environmentVariable = "COROUTINES_BACKEND"

  /// The backend every coroutine of this process uses.
  public static var current: CoroutineBackend {
    cu_backend() == CoroutineBackend.fast.shimValue ? .fast : .ucontext
  }

  /// True when this machine has the backend (``fast`` needs x86_64).
  public var isAvailable: Bool {
    switch self {
    case .ucontext: return true
    case .fast:
      #if arch(x86_64)
        return true
      #else
        return false
      #endif
    }
  }

  /// The number the C shim knows the backend by.
  var shimValue: Int32 {
    switch self {
    case .ucontext: 0
    case .fast: 1
    }
  }
}
