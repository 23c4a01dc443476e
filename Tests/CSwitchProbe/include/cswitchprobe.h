// The tests' self-check of the two context switches (probe.c), beside the library rather than in
// it: only the tests run it.
#ifndef CSWITCHPROBE_H
#define CSWITCHPROBE_H

/// What cu_backend_probe found.
enum {
  CU_PROBE_PASSED = 0,
  CU_PROBE_UNAVAILABLE = 1,      // the backend does not exist on this machine
  CU_PROBE_NO_MEMORY = 2,        // the probe could not allocate its context
  CU_PROBE_NOT_STARTED = 3,      // the made context did not run, or ran the wrong number of times
  CU_PROBE_BAD_ARGUMENTS = 4,    // the made context's entry missed makecontext's arguments
  CU_PROBE_LOST_REGISTERS = 5,   // a callee-saved register changed across a switch
  CU_PROBE_LOST_FP_CONTROL = 6,  // a side's x87 or SSE rounding mode leaked to the other
};

/// Checks one backend's switch (0: swapcontext, 1: the register-only switch) without touching
/// the one in use: starts a context made by getcontext + makecontext with six arguments and
/// switches into it and back a few times, checking on both sides that callee-saved registers and
/// floating-point control words survive. Returns CU_PROBE_PASSED or the first problem found.
int cu_backend_probe(int backend);

#endif
