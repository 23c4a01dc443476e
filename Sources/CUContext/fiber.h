// The fiber layout shared by the C files of the shim (never seen by Swift).
// Calls go down only: context → shared → overflow → exclusivity → stack → switch (→ its .S);
// tls.c only defines the thread-locals.
#ifndef CU_FIBER_H
#define CU_FIBER_H

#include <ucontext.h>

#include "cucontext.h"
#include "sanitizer.h"

// What a parked fiber on a shared stack keeps of its switch context, at the head of its saved
// bytes: what a callee must preserve across a call, where its suspending call returns to, and the
// signal mask that swapcontext carries. Everything else in ucontext_t is dead at a call.
typedef struct cu_parked_context {
#if defined(__x86_64__)
  unsigned long long registers[7];  // rip, rbx, rbp, r12–r15 (the stack pointer: where bytes go)
  unsigned long long signal_mask;  // the kernel's 64 signals (what swapcontext passes it)
  unsigned int mxcsr;
  unsigned short x87_control;
  unsigned short unused;
#else
  ucontext_t context;  // elsewhere the whole context (no compact layout written yet)
#endif
} cu_parked_context;

// A parked fiber's registers and frames, frozen: the words of a cu_parked_context, then the
// stack's words from the saved stack pointer up to the top. Held by the fiber that parked so and
// by the fibers stored as differences from it (`references` counts them); freed with the last.
// The stack names it as the reference for its depth meanwhile. Touched only by the thread
// running the stack.
typedef struct cu_stack_image {
  unsigned references;
  unsigned words;
  unsigned long long word[];
} cu_stack_image;

enum { cu_stack_images = 4 };  // references kept per stack, one per depth

struct cu_shared_stack {
  ucontext_t self;     // the occupant's registers while it is switched out
  ucontext_t resumer;  // the occupant's resumer's registers while it runs
  void *mapping;       // the whole region, guard included
  size_t mapping_size;
  char *base;                      // lowest usable address
  char *top;                       // one past the highest: frames grow down from here
  struct cu_fiber *occupant;       // whose frames are on the stack now, or NULL
  cu_parked_context start;         // the control words and mask a fiber starts with
  cu_stack_image *images[cu_stack_images];  // references by depth, unowned (NULL: free)
  unsigned next_image;                      // the one replaced next when all are taken
  unsigned fibers;  // fibers made on the stack and not yet freed (deltas pay off only with many)
};

struct cu_fiber {
  // Both kinds of fiber.
  void *exclusivity[2];  // the fiber's own Swift exclusivity access set
  cu_fiber_entry entry;
  void *argument;
  struct cu_shared_stack *shared;  // the stack it runs on, or NULL for a stack of its own
  size_t stack_size;
  size_t requested_size;           // the stack size the coroutine asked for, for overflow reports
  cu_sanitizer_fiber sanitizer;    // ASan/TSan bookkeeping; empty in plain builds
  // Where the fiber's registers rest while it is switched out: its own context, or its shared
  // stack's. Set when the record is built, so a switch needs no test of the kind.
  ucontext_t *self_context;
  // Where the resumer's registers rest while the fiber runs. For a fiber with a stack of its own:
  // the context of the fiber that resumed it (free while that one waits for this one), or the
  // resuming thread's own (cu_thread.context), set on every resume. Never a context in this
  // record: that was a cold line to write on every resume. For a fiber on a shared stack: the
  // stack's `resumer`, set when the record is built.
  ucontext_t *resumer;
  // What the thread was running when it resumed the fiber, put back by the fiber itself just
  // before it switches out (see cu_fiber_resume for why the fiber does it).
  void *coroutine_before;
  struct cu_fiber *fiber_before;
  union {
    struct {  // A fiber with a stack of its own (stack.c).
      void *mapping;               // start of the fiber's slot (guard included)
      size_t mapping_size;         // bytes of the slot
      struct cu_stack_slab *slab;  // the slab the slot belongs to
      size_t slot;                 // the slot's index in `slab`
      char name[64];      // the coroutine's name for overflow reports (may be cut)
      ucontext_t self;    // where the fiber's registers rest while it is suspended
    };
    struct {  // A fiber on a shared stack (shared.c): its record ends here.
      void *saved;          // its registers and used stack bytes while another fiber has the stack:
                            // a cu_stack_image, or a cu_stack_delta when `delta` is set
      char *label;          // its name for overflow reports, or NULL (heap copy, cut like `name`)
      unsigned saved_size;  // bytes allocated at `saved` (kept while in place, for reuse)
      unsigned char fresh;  // prepared but not started: its context is made on first resume
      unsigned char delta;  // `saved` holds only the words that differ from a stack image
    };
  };
};

static inline size_t cu_round_up(size_t value, size_t unit) {
  return (value + unit - 1) / unit * unit;
}

// The lowest usable stack address.
static inline void *cu_fiber_stack_bottom(const cu_fiber *fiber) {
  return fiber->shared != NULL ? fiber->shared->base : fiber->self.uc_stack.ss_sp;
}
// Copies `name` (NULL: none) into `capacity` bytes, cut on a UTF-8 boundary with "..." (overflow.c).
void cu_copy_label(char *destination, size_t capacity, const char *name);

// What the shim keeps per thread (tls.c), in one thread-local so that a switch computes its
// address once. Read and written only before a switch, never after one: a compiler may keep a
// thread-local's address across a call, and the code after a switch may run on another thread.
typedef struct cu_thread_state {
  void *current_coroutine;  // the coroutine running on this thread (cu_tls_current_coroutine)
  cu_fiber *running_fiber;  // the fiber running on this thread, for overflow reports
  // Where this thread's Swift exclusivity access-set head lives (exclusivity.c); when it could
  // not be found, a word that is never NULL, so that every switch swaps the sets through the
  // runtime. Set by cu_prepare_thread.
  void **exclusivity_head;
  int prepared;  // cu_prepare_thread has run on this thread
  // Where this thread's registers rest while a fiber it resumed from its own stack (outside any
  // fiber) runs: one at a time per thread, since that stack waits meanwhile.
  ucontext_t context;
} cu_thread_state;

extern __thread cu_thread_state cu_thread;

// Prepares the thread on its first resume (overflow.c): an alternate signal stack for overflow
// reports, and the exclusivity head.
void cu_prepare_thread(void);
// Where this thread's exclusivity access-set head lives (exclusivity.c), or if it could not
// be found a word that is never NULL.
void **cu_exclusivity_find_head(void);

// True when swapping the fiber's access set with the thread's would change nothing: both empty.
// swift_task_enter/exitThreadLocalContext return untouched in exactly that case.
static inline int cu_exclusivity_swap_is_noop(void **head, const cu_fiber *fiber) {
  return *head == NULL && fiber->exclusivity[0] == NULL;
}

// Exported by libswiftCore and declared in no header: they move the current thread's dynamic
// exclusivity access set aside and put a task's (here: a fiber's) own set in its place.
extern void swift_task_enterThreadLocalContext(char *state);
extern void swift_task_exitThreadLocalContext(char *state);

// Enters the fiber on this thread: records what ran before, for cu_fiber_leave_thread, and
// points the fiber at where its resumer's registers will rest.
static inline void cu_fiber_enter_thread(cu_fiber *fiber, void *coroutine) {
  cu_thread_state *thread = &cu_thread;
  if (__builtin_expect(!thread->prepared, 0)) cu_prepare_thread();
  cu_fiber *before = thread->running_fiber;
  fiber->coroutine_before = thread->current_coroutine;
  fiber->fiber_before = before;
  thread->current_coroutine = coroutine;
  thread->running_fiber = fiber;
  if (fiber->shared == NULL) {
    fiber->resumer = before != NULL ? before->self_context : &thread->context;
  }
}

// Gives the thread back to whoever resumed the fiber, on the fiber's side just before it
// switches out: the thread-locals it changed, and Swift's exclusivity access sets.
static inline void cu_fiber_leave_thread(cu_fiber *fiber) {
  cu_thread_state *thread = &cu_thread;
  if (!cu_exclusivity_swap_is_noop(thread->exclusivity_head, fiber)) {
    swift_task_exitThreadLocalContext((char *)fiber->exclusivity);
  }
  thread->running_fiber = fiber->fiber_before;
  thread->current_coroutine = fiber->coroutine_before;
}

// Shared-stack mode (shared.c), called by context.c. `acquire` puts the fiber's registers and
// saved bytes back on its shared stack (first saving the previous occupant's) before it is
// resumed, and makes a prepared fiber's starting context there. `armed` marks a fiber prepared.
void cu_shared_stack_acquire(cu_fiber *fiber);
void cu_shared_fiber_armed(cu_fiber *fiber);
// Relabels a fiber built by cu_fiber_new_shared (cu_fiber_set_label dispatches here).
void cu_shared_fiber_set_label(cu_fiber *fiber, const char *name);
// The switch of the backend in use (switch.c), called straight through the pointer so that
// resume and suspend end in a tail call (see context.c).
typedef void (*cu_switch_function)(ucontext_t *from, ucontext_t *to);
// Hidden, so that the compiler loads it straight, as a static, rather than through the GOT.
extern __attribute__((visibility("hidden"))) cu_switch_function cu_current_switch;
// The switch of a backend (see cu_backend), or NULL where it does not exist.
cu_switch_function cu_backend_switch(int backend);

#if defined(__x86_64__)
// The fast backend's switch (switch_x86_64.S): saves the callee-saved registers, MXCSR and the
// x87 control word of the caller in `from` and continues `to`, both in glibc's own layout.
void cu_switch_fast(ucontext_t *from, ucontext_t *to);
#endif

#endif
