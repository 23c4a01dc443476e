// The fast backend: a context switch that saves only what the System V x86_64 ABI obliges a
// called function to hand back unchanged, and nothing it may clobber. Because a caller of
// cu_switch_fast already assumes every caller-saved register (rax, rcx, rdx, rsi, rdi, r8–r11,
// xmm0–15, the x87 stack and the status flags) is lost across the call, none of them needs
// saving; the signal mask is left alone (it belongs to the thread, see Internals.md), which is
// what spares the system call swapcontext makes on every switch.
//
// Every value lives where glibc keeps it in ucontext_t (offsets in switch_offsets.h), so a
// context made by getcontext + makecontext starts here, and contexts are interchangeable with
// glibc's as far as the callee-saved state goes.
#if defined(__x86_64__)

#include "switch_offsets.h"

        .text
        .globl  cu_switch_fast
        .hidden cu_switch_fast
        .type   cu_switch_fast, @function
        .p2align 4
// void cu_switch_fast(ucontext_t *from /* rdi */, ucontext_t *to /* rsi */)
cu_switch_fast:
        .cfi_startproc
        // Save the caller. Resuming `from` must look like this call returning: the resume
        // address is our return address, and the stack pointer is the one the caller will see
        // after the return pops it.
        movq    (%rsp), %rax
        leaq    8(%rsp), %rcx
        movq    %rax, CU_UC_RIP(%rdi)
        movq    %rcx, CU_UC_RSP(%rdi)
        movq    %rbx, CU_UC_RBX(%rdi)
        movq    %rbp, CU_UC_RBP(%rdi)
        movq    %r12, CU_UC_R12(%rdi)
        movq    %r13, CU_UC_R13(%rdi)
        movq    %r14, CU_UC_R14(%rdi)
        movq    %r15, CU_UC_R15(%rdi)
        // The control bits of the floating-point units (rounding, precision, exception masks)
        // are callee-saved too. The x87 control word goes where glibc's fnstenv puts it, at the
        // start of the area fpregs points to; aim the pointer first, as glibc does, because a
        // ucontext_t that only ever received a switch (a resumer's) has never had it set.
        leaq    CU_UC_FPREGS_MEM(%rdi), %rdx
        movq    %rdx, CU_UC_FPREGS(%rdi)
        fnstcw  (%rdx)
        stmxcsr CU_UC_MXCSR(%rdi)

        // Restore the target. A made context gets the control words saved by the getcontext
        // that preceded makecontext; a switched-out one gets its own.
        movq    CU_UC_FPREGS(%rsi), %rdx
        fldcw   (%rdx)
        ldmxcsr CU_UC_MXCSR(%rsi)
        movq    CU_UC_RSP(%rsi), %rsp
        movq    CU_UC_RBX(%rsi), %rbx
        movq    CU_UC_RBP(%rsi), %rbp
        movq    CU_UC_R12(%rsi), %r12
        movq    CU_UC_R13(%rsi), %r13
        movq    CU_UC_R14(%rsi), %r14
        movq    CU_UC_R15(%rsi), %r15
        movq    CU_UC_RIP(%rsi), %r11
        // The argument registers makecontext filled in, so a fresh context's entry function
        // receives its arguments. For a context saved above they hold stale values, which is
        // harmless: the code resumed there is returning from a call and treats them as lost.
        movq    CU_UC_RDX(%rsi), %rdx
        movq    CU_UC_RCX(%rsi), %rcx
        movq    CU_UC_R8(%rsi), %r8
        movq    CU_UC_R9(%rsi), %r9
        movq    CU_UC_RDI(%rsi), %rdi
        movq    CU_UC_RSI(%rsi), %rsi
        // Jump rather than push + ret: a ret here would pop an address the return-stack
        // predictor never saw called, and mispredict on every switch. For a made context the
        // stack already holds the return address makecontext put there (__start_context).
        jmp     *%r11
        .cfi_endproc
        .size   cu_switch_fast, .-cu_switch_fast

#endif

// No executable stack: without this note the linker marks the whole program's stack executable.
        .section .note.GNU-stack, "", @progbits
