// The smallest honest register-only switch, as a baseline: everything it saves goes on the
// stack being left, and only the stack pointer goes into memory elsewhere.
//
// Frame on a suspended stack, from the saved stack pointer up:
//   [0] MXCSR (low 32 bits) and x87 control word (bits 32-47)
//   [1] r15  [2] r14  [3] r13  [4] r12  [5] rbx  [6] rbp
//   [7] resume address
#if defined(__x86_64__)
        .text
        .globl  baseline_switch
        .type   baseline_switch, @function
        .p2align 4
// void baseline_switch(void **save_stack_pointer /* rdi */, void *load_stack_pointer /* rsi */)
baseline_switch:
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        subq    $8, %rsp
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
        movq    %rsp, (%rdi)

        movq    %rsi, %rsp
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
        addq    $8, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        popq    %rcx
        jmp     *%rcx
        .size   baseline_switch, .-baseline_switch

// First resume of a fresh stack lands here with rsp 16-byte aligned (the frame sits on an aligned
// top): call the body so that it sees the alignment a call gives.
        .globl  baseline_switch_start
        .type   baseline_switch_start, @function
baseline_switch_start:
        call    baseline_bounce
        ud2
        .size   baseline_switch_start, .-baseline_switch_start

// The same, entering the variant of the coroutine with frames spanning the switch
// (return_prediction.c).
        .globl  baseline_switch_start_spanning
        .type   baseline_switch_start_spanning, @function
baseline_switch_start_spanning:
        call    baseline_bounce_spanning
        ud2
        .size   baseline_switch_start_spanning, .-baseline_switch_start_spanning
#endif
        .section .note.GNU-stack, "", @progbits
