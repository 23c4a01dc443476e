#if COROUTINES_TSAN
  import Coroutines

  // The tests' own `Mutex` resolves to the library's TSan-visible one (see SanitizerMutex.swift),
  // so ThreadSanitizer sees the locks that tests take too.
  typealias Mutex = Coroutines.Mutex
#endif
