// Byte offsets into glibc's x86_64 ucontext_t, shared by the assembly switch (which cannot use
// offsetof) and switch_layout.c (which checks each one against <ucontext.h> when it compiles).
#ifndef CU_SWITCH_OFFSETS_H
#define CU_SWITCH_OFFSETS_H

// uc_mcontext.gregs[REG_*]: callee-saved registers, the stack pointer and the resume address.
#define CU_UC_R12 0x48
#define CU_UC_R13 0x50
#define CU_UC_R14 0x58
#define CU_UC_R15 0x60
#define CU_UC_RBP 0x78
#define CU_UC_RBX 0x80
#define CU_UC_RSP 0xa0
#define CU_UC_RIP 0xa8

// uc_mcontext.gregs[REG_*]: where makecontext leaves the entry function's first six arguments.
#define CU_UC_R8 0x28
#define CU_UC_R9 0x30
#define CU_UC_RDI 0x68
#define CU_UC_RSI 0x70
#define CU_UC_RDX 0x88
#define CU_UC_RCX 0x98

// uc_mcontext.fpregs: points at the x87/SSE area; getcontext and swapcontext aim it at
// __fpregs_mem inside the same ucontext_t. The x87 control word is the area's first field.
#define CU_UC_FPREGS 0xe0
#define CU_UC_FPREGS_MEM 0x1a8
// __fpregs_mem.mxcsr: glibc reads and writes MXCSR here directly, not through the pointer.
#define CU_UC_MXCSR 0x1c0

#endif
