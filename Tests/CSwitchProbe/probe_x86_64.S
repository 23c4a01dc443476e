// A witness for the backend self-check (probe.c): calls fn(arg) with a known value in every
// callee-saved register and reports whether any came back changed. Each side of a switch uses
// its own seed, so a switch that leaves one side's value in place is caught too. A switch that
// forgets to restore one of them is caught here deterministically, whatever the C compiler keeps
// where.
#if defined(__x86_64__)

        .text
        .globl  cu_probe_call_preserving
        .hidden cu_probe_call_preserving
        .type   cu_probe_call_preserving, @function
        .p2align 4
// uint64_t cu_probe_call_preserving(void (*fn)(void *) /* rdi */, void *arg /* rsi */,
//                                   uint64_t seed /* rdx */)
// Puts seed+1 … seed+6 in rbx, rbp, r12–r15 for the call; returns 0 when all of them survived,
// else the OR of each register XORed with its expected value. The seed itself is kept in the
// frame: a callee-saved register cannot be trusted to carry it.
cu_probe_call_preserving:
        .cfi_startproc
        pushq   %rbp
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbp, 0
        pushq   %rbx
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbx, 0
        pushq   %r12
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r12, 0
        pushq   %r13
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r13, 0
        pushq   %r14
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r14, 0
        pushq   %r15
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r15, 0
        // Six pushes after the return address leave rsp 8 bytes off the 16 the call needs; the
        // slot this makes holds the seed.
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8

        movq    %rdx, (%rsp)
        leaq    1(%rdx), %rbx
        leaq    2(%rdx), %rbp
        leaq    3(%rdx), %r12
        leaq    4(%rdx), %r13
        leaq    5(%rdx), %r14
        leaq    6(%rdx), %r15
        movq    %rdi, %rax
        movq    %rsi, %rdi
        call    *%rax

        movq    (%rsp), %rdx
        leaq    1(%rdx), %rax
        xorq    %rbx, %rax
        leaq    2(%rdx), %rcx
        xorq    %rbp, %rcx
        orq     %rcx, %rax
        leaq    3(%rdx), %rcx
        xorq    %r12, %rcx
        orq     %rcx, %rax
        leaq    4(%rdx), %rcx
        xorq    %r13, %rcx
        orq     %rcx, %rax
        leaq    5(%rdx), %rcx
        xorq    %r14, %rcx
        orq     %rcx, %rax
        leaq    6(%rdx), %rcx
        xorq    %r15, %rcx
        orq     %rcx, %rax

        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %r15
        .cfi_adjust_cfa_offset -8
        popq    %r14
        .cfi_adjust_cfa_offset -8
        popq    %r13
        .cfi_adjust_cfa_offset -8
        popq    %r12
        .cfi_adjust_cfa_offset -8
        popq    %rbx
        .cfi_adjust_cfa_offset -8
        popq    %rbp
        .cfi_adjust_cfa_offset -8
        ret
        .cfi_endproc
        .size   cu_probe_call_preserving, .-cu_probe_call_preserving

#endif

        .section .note.GNU-stack, "", @progbits
