// The C shim's interface: the switch, fibers and their stacks. Swift sees opaque fibers, plain
// functions and integers; ucontext_t never crosses this line. What else the runtime needs in C
// (its thread-locals, lock, generator bias) is the CLinux module's.
#ifndef CUCONTEXT_H
#define CUCONTEXT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// An execution context with its own guarded stack. Opaque to Swift.
typedef struct cu_fiber cu_fiber;

/// What a fiber runs. When it returns, the fiber switches back to its resumer for the last time.
typedef void (*cu_fiber_entry)(void *_Nullable argument);

/// Stacks mapped together: one kernel mapping cut into `count` equal slots, each a guard region,
/// a stack and a fiber. Opaque to Swift.
typedef struct cu_stack_slab cu_stack_slab;

/// Maps `count` slots for stacks of `stack_size` usable bytes (rounded up to whole pages) above
/// PROT_NONE guards of `guard_size` bytes, in one mapping. Nothing is committed or guarded until a
/// slot is first used. Returns NULL and leaves errno set when the kernel refuses the mapping.
cu_stack_slab *_Nullable cu_stack_slab_new(size_t stack_size, size_t guard_size, size_t count);

/// The fiber of slot `index`: built (and its guard installed) on first use or after
/// cu_stack_release_fibers; otherwise the fiber already there. Returns NULL and leaves errno set
/// when the guard cannot be installed.
cu_fiber *_Nullable cu_stack_slab_fiber(cu_stack_slab *_Nonnull slab, size_t index);

/// Gives the touched pages of these built fibers' slots back to the system, one system call per
/// run of neighbouring slots; their guards stay, and the next cu_stack_slab_fiber of one of their
/// slots builds a fresh fiber.
void cu_stack_release_fibers(cu_fiber *_Nonnull const *_Nonnull fibers, size_t count);

/// Unmaps the slab and frees its record. No fiber of it may be running or suspended mid-body.
void cu_stack_slab_free(cu_stack_slab *_Nonnull slab);

/// The number of slots of the slab.
size_t cu_stack_slab_count(const cu_stack_slab *_Nonnull slab);

/// For tests: guards installed from now on are PROT_NONE regions made by mprotect, one system
/// call per slot, as on a kernel without guard markers. For good: there is no way back.
void cu_stack_force_guard_fallback(void);

/// For tests: 1 while guards are installed as guard markers in runs of slots (one system call per
/// run), 0 once the kernel refused either and every guard is installed alone.
int cu_stack_guard_runs_work(void);

/// For tests: the system calls made so far to install the slab's guards (one for a run of slots).
size_t cu_stack_slab_guard_calls(const cu_stack_slab *_Nonnull slab);

/// The index of a slab fiber's slot.
size_t cu_fiber_slot(const cu_fiber *_Nonnull fiber);

/// The slab a fiber's slot belongs to (a slab's fibers only).
cu_stack_slab *_Nullable cu_fiber_slab(const cu_fiber *_Nonnull fiber);

/// Frees a fiber on a shared stack: its record and saved bytes. It must not be running or
/// suspended mid-body. (A slab's fibers go with their slab.)
void cu_fiber_free(cu_fiber *_Nonnull fiber);

/// A stack that many fibers take turns on: while one runs there, the used part of each of the
/// others waits in a heap buffer of exactly its size (or only the words of it that differ from
/// another parked fiber's at the same depth). Opaque to Swift.
typedef struct cu_shared_stack cu_shared_stack;

/// Maps a shared stack of `stack_size` usable bytes (rounded up to whole pages) above a
/// PROT_NONE guard of `guard_size` bytes. Returns NULL and leaves errno set when the kernel
/// refuses.
cu_shared_stack *_Nullable cu_shared_stack_new(size_t stack_size, size_t guard_size);

/// Unmaps a shared stack. Every fiber bound to it must have been freed.
void cu_shared_stack_free(cu_shared_stack *_Nonnull stack);

/// Builds a fiber bound for life to `stack` (its frames hold absolute addresses, so it can only
/// run where it began). Its record is on the heap; it takes no mapping of its own. Resume the
/// fibers of one shared stack from one thread at a time, and never from a fiber on that same
/// stack. Returns NULL when out of memory.
cu_fiber *_Nullable cu_fiber_new_shared(cu_shared_stack *_Nonnull stack);

/// Bytes of the fiber's own heap buffer right now: its used stack and the few registers of its
/// context that a suspension leaves live, whole or as the words that differ from an image it
/// shares (0 while its frames are in place on the shared stack, and always 0 for a fiber with
/// its own stack).
size_t cu_fiber_saved_size(const cu_fiber *_Nonnull fiber);

/// How many fibers a shared stack must carry before a parking is stored as the words that
/// differ from an image: below it, whole copies (faster to switch, and little memory anyway).
enum { CU_SHARED_DELTA_MIN_FIBERS = 32 };

/// Sets bit `first + i` of `map` for each of `count` words that differs from `reference`'s, as a
/// parking on a shared stack is compared with its stack's image (shared.c; exported for tests).
/// Uses AVX2 where the processor has it.
void cu_shared_stack_mark_differences(const unsigned long long *_Nonnull words,
                                      const unsigned long long *_Nonnull reference, size_t count,
                                      size_t first, unsigned long long *_Nonnull map);
/// The same without AVX2 (SSE2 on x86_64), which processors without it take (for tests).
void cu_shared_stack_mark_differences_baseline(const unsigned long long *_Nonnull words,
                                               const unsigned long long *_Nonnull reference,
                                               size_t count, size_t first,
                                               unsigned long long *_Nonnull map);

/// Arms a new or finished fiber to run `entry(argument)` from the top of its stack on the next
/// resume. Reusing a pooled fiber this way costs no system call.
void cu_fiber_prepare(cu_fiber *_Nonnull fiber, cu_fiber_entry _Nonnull entry,
                      void *_Nullable argument);

/// Switches from the calling stack into the fiber; returns when the fiber suspends or finishes.
/// Swift's exclusivity access set is swapped for the fiber's own around the switch, so accesses
/// begun in the fiber never mix with the resuming thread's; and the thread's current coroutine
/// (`cu_tls_current_coroutine`) is `coroutine` while the fiber runs, and what it was afterwards.
void cu_fiber_resume(cu_fiber *_Nonnull fiber, void *_Nullable coroutine);

/// Hints to the processor, for a loop that knows which coroutines it resumes next: fetch the
/// fiber's saved context; fetch the top of its saved frames (read from that context, so ask for
/// the context a little earlier).
void cu_fiber_prefetch_context(const cu_fiber *_Nonnull fiber);
void cu_fiber_prefetch_frames(const cu_fiber *_Nonnull fiber);

/// Called on the fiber's own stack: switches back to whoever resumed it. Returns when resumed.
void cu_fiber_suspend(cu_fiber *_Nonnull fiber);

/// Labels the fiber for stack overflow reports with the name and requested stack size of the
/// coroutine that runs on it next. NULL clears the name; the name is copied, and cut to 63 bytes.
void cu_fiber_set_label(cu_fiber *_Nonnull fiber, const char *_Nullable name, size_t stack_size);

/// Usable stack bytes of the fiber (after rounding).
size_t cu_fiber_stack_size(const cu_fiber *_Nonnull fiber);

/// The system page size.
size_t cu_page_size(void);

/// 1 when backtraces of suspended fibers can be taken here (libunwind found, x86_64), else 0.
/// The first call loads libunwind; nothing does before.
int cu_backtrace_available(void);

/// Unwinds a suspended fiber with a stack of its own from the registers its switch saved: writes
/// up to `capacity` frames, innermost first, each as its return address into `pcs` and its stack
/// pointer into `sps` (so each return address after the first lies just below its frame's stack
/// pointer), and returns how many, or -1 when it cannot (no unwinder, or a fiber on a shared
/// stack). The fiber must stay suspended meanwhile.
long cu_fiber_backtrace(const cu_fiber *_Nonnull fiber, uintptr_t *_Nonnull pcs,
                        uintptr_t *_Nonnull sps, long capacity);

/// The resume address and stack pointer that a suspended fiber's switch saved.
uintptr_t cu_fiber_saved_pc(const cu_fiber *_Nonnull fiber);
uintptr_t cu_fiber_saved_sp(const cu_fiber *_Nonnull fiber);

/// Writes the name of the function containing `pc` (demangled when it is a Swift name) into
/// `buffer`, and returns `pc`'s offset in it, or -1 when no symbol covers it.
long cu_symbol_name(uintptr_t pc, char *_Nonnull buffer, size_t size);

/// The switch every fiber uses, chosen when the program loads (COROUTINES_BACKEND): 0 for glibc
/// swapcontext, 1 for the register-only switch (x86_64 only).
int cu_backend(void);

// Thread-locals. Each access is a real call so that no compiler caches a thread-local's address
// across a context switch: a coroutine may resume on another thread.

/// The coroutine running on this thread, or NULL.
void *_Nullable cu_tls_current_coroutine(void);

/// 1 when switches can tell, without calling into the Swift runtime, that neither side has an
/// exclusivity access in flight, and so skip swapping the access sets; 0 when every switch swaps.
int cu_exclusivity_swap_skippable(void);

/// For tests: 1 makes every switch on the calling thread swap the access sets through the
/// runtime, as on a runtime whose set the shim cannot find; 0 goes back to skipping when it can.
void cu_exclusivity_force_runtime_swaps(int force);

#ifdef __cplusplus
}
#endif

#endif
