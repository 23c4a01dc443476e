// The whole interface between the Swift runtime and the C shim. Swift sees opaque fibers,
// plain functions and integers; ucontext_t never crosses this line.
#ifndef CUCONTEXT_H
#define CUCONTEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// An execution context with its own guarded stack. Opaque to Swift.
typedef struct cu_fiber cu_fiber;

/// What a fiber runs. When it returns, the fiber switches back to its resumer for the last time.
typedef void (*cu_fiber_entry)(void *_Nullable argument);

/// Maps a stack of `stack_size` usable bytes (rounded up to whole pages) with a PROT_NONE guard
/// region of `guard_size` bytes below it, and builds a fiber on it. Pages are committed only when
/// touched. Returns NULL and leaves errno set when the kernel refuses the mapping.
cu_fiber *_Nullable cu_fiber_new(size_t stack_size, size_t guard_size);

/// Unmaps the fiber's stack. The fiber must not be running or suspended mid-body.
void cu_fiber_free(cu_fiber *_Nonnull fiber);

/// Arms a new or finished fiber to run `entry(argument)` from the top of its stack on the next
/// resume. Reusing a pooled fiber this way costs no system call.
void cu_fiber_prepare(cu_fiber *_Nonnull fiber, cu_fiber_entry _Nonnull entry,
                      void *_Nullable argument);

/// Switches from the calling stack into the fiber; returns when the fiber suspends or finishes.
/// Swift's exclusivity access set is swapped for the fiber's own around the switch, so accesses
/// begun in the fiber never mix with the resuming thread's.
void cu_fiber_resume(cu_fiber *_Nonnull fiber);

/// Called on the fiber's own stack: switches back to whoever resumed it. Returns when resumed.
void cu_fiber_suspend(cu_fiber *_Nonnull fiber);

/// Labels the fiber for stack overflow reports with the name and requested stack size of the
/// coroutine that runs on it next. NULL clears the name; the name is copied, and cut to 63 bytes.
void cu_fiber_set_label(cu_fiber *_Nonnull fiber, const char *_Nullable name, size_t stack_size);

/// Usable stack bytes of the fiber (after rounding).
size_t cu_fiber_stack_size(const cu_fiber *_Nonnull fiber);

/// Bytes of stack touched below `stack_top` (a fiber's address: its stack ends there), looking
/// at most `stack_size` bytes down; page granularity. Asks the kernel which pages are resident,
/// so it never reads the stack and returns 0 for an address that is no longer mapped. A pooled
/// stack remembers the deepest use of every coroutine that ran on it.
size_t cu_stack_high_water(const void *_Nonnull stack_top, size_t stack_size);

/// Makes SIGQUIT write one byte to `write_fd` (a non-blocking pipe) instead of ending the
/// process. Returns 0, or -1 with errno set.
int cu_sigquit_notify(int write_fd);

/// The system page size.
size_t cu_page_size(void);

/// Chooses the switch used by every fiber from now on: 0 selects glibc swapcontext.
/// Returns 0 on success, -1 when the backend is not available on this machine.
int cu_set_backend(int backend);

/// The backend in use (see cu_set_backend).
int cu_backend(void);

// Thread-locals. Each access is a real call so that no compiler caches a thread-local's address
// across a context switch: a coroutine may resume on another thread.

/// The coroutine running on this thread, or NULL.
void *_Nullable cu_tls_current_coroutine(void);
/// Sets the coroutine running on this thread.
void cu_tls_set_current_coroutine(void *_Nullable coroutine);
/// The scheduler loop this thread is running, or NULL.
void *_Nullable cu_tls_current_loop(void);
/// Sets the scheduler loop this thread is running.
void cu_tls_set_current_loop(void *_Nullable loop);

#ifdef __cplusplus
}
#endif

#endif
