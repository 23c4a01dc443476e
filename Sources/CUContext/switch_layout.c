// Compile-time proof that the offsets the assembly switch uses are glibc's: if a libc lays out
// ucontext_t differently, the build stops here instead of the switch corrupting memory.
#define _GNU_SOURCE  // for REG_RBX and friends
#include <stddef.h>
#include <ucontext.h>

#include "switch_offsets.h"

#if defined(__x86_64__)
#define CU_CHECK_GREG(reg) \
  _Static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_##reg]) == CU_UC_##reg, \
                 "ucontext_t.gregs[REG_" #reg "] is not where switch_x86_64.S expects it")
CU_CHECK_GREG(RBX);
CU_CHECK_GREG(RBP);
CU_CHECK_GREG(R12);
CU_CHECK_GREG(R13);
CU_CHECK_GREG(R14);
CU_CHECK_GREG(R15);
CU_CHECK_GREG(RSP);
CU_CHECK_GREG(RIP);
CU_CHECK_GREG(RDI);
CU_CHECK_GREG(RSI);
CU_CHECK_GREG(RDX);
CU_CHECK_GREG(RCX);
CU_CHECK_GREG(R8);
CU_CHECK_GREG(R9);
_Static_assert(offsetof(ucontext_t, uc_mcontext.fpregs) == CU_UC_FPREGS,
               "ucontext_t.uc_mcontext.fpregs moved");
_Static_assert(offsetof(ucontext_t, __fpregs_mem) == CU_UC_FPREGS_MEM,
               "ucontext_t.__fpregs_mem moved");
_Static_assert(offsetof(ucontext_t, __fpregs_mem.mxcsr) == CU_UC_MXCSR,
               "ucontext_t.__fpregs_mem.mxcsr moved");
_Static_assert(offsetof(struct _libc_fpstate, cwd) == 0,
               "the x87 control word is no longer first in the fpregs area");
#endif
