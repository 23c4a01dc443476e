// Shared stacks: many fibers take turns on one mapped stack. Each stack remembers its occupant,
// the last fiber that ran there; only when a different fiber is about to run is the occupant's
// used part (from its saved stack pointer to the top) copied out to a heap buffer of exactly that
// size, and the newcomer's saved bytes copied back to the addresses they came from. A fiber
// resumed on a stack it still occupies costs no copy.
//
// The stack, not the fiber, holds the two switch contexts (ucontext_t, 936 bytes each on
// x86_64): only the occupant ever runs there, from one thread at a time. When the occupant is
// copied out, the few registers of its context that are live at a suspension (cu_parked_context)
// go to the head of the same buffer, and come back into the stack's context with its bytes. So a
// parked fiber costs a small record, its used stack and 72 bytes, on either backend — and often
// much less: see save() on storing only the words that differ from an image of the same depth.
#define _GNU_SOURCE  // REG_RSP
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "fiber.h"

// Under AddressSanitizer (CU_ASAN, sanitizer.h) the copies and word loops must neither be
// checked (a switched-out fiber's frames hold redzones) nor leave one coroutine's redzone
// markings over another's frames: the stack is unpoisoned whenever its occupant changes.
#if defined(CU_ASAN)
#include <sanitizer/asan_interface.h>
#define CU_UNCHECKED __attribute__((no_sanitize("address")))
// A plain copy the sanitizer neither checks nor intercepts; short enough not to matter.
CU_UNCHECKED static void copy_bytes(char *to, const char *from, size_t size) {
  for (size_t i = 0; i < size; i++) to[i] = from[i];
}
#else
#define CU_UNCHECKED
#define copy_bytes(to, from, size) memcpy((to), (from), (size))
#endif

// Moving the live part of a switched-out context in and out of the stack's ucontext_t. On
// x86_64 both switches (swapcontext and the register-only one) leave the control words in the
// context's own __fpregs_mem, which its fpregs pointer always names.
#if defined(__x86_64__)
// Where each of cu_parked_context's registers is in gregs.
static const int parked_registers[7] = {REG_RIP, REG_RBX, REG_RBP, REG_R12,
                                        REG_R13, REG_R14, REG_R15};

static void pack(cu_parked_context *parked, const ucontext_t *context) {
  for (int i = 0; i < 7; i++) {
    parked->registers[i] = (unsigned long long)context->uc_mcontext.gregs[parked_registers[i]];
  }
  memcpy(&parked->signal_mask, &context->uc_sigmask, sizeof parked->signal_mask);
  parked->mxcsr = context->__fpregs_mem.mxcsr;
  parked->x87_control = context->__fpregs_mem.cwd;
}

static void unpack(ucontext_t *context, const cu_parked_context *parked) {
  for (int i = 0; i < 7; i++) {
    context->uc_mcontext.gregs[parked_registers[i]] = (greg_t)parked->registers[i];
  }
  memcpy(&context->uc_sigmask, &parked->signal_mask, sizeof parked->signal_mask);
  context->__fpregs_mem.mxcsr = parked->mxcsr;
  context->__fpregs_mem.cwd = parked->x87_control;
}

// Where the suspended fiber's frames end: the stack pointer its switch saved. Nothing below it
// is live, since the switch was entered by a call (see Internals.md on the red zone).
static char *saved_stack_pointer(const ucontext_t *context) {
  return (char *)context->uc_mcontext.gregs[REG_RSP];
}

static void set_stack_pointer(ucontext_t *context, char *stack_pointer) {
  context->uc_mcontext.gregs[REG_RSP] = (greg_t)stack_pointer;
}
#else
static void pack(cu_parked_context *parked, const ucontext_t *context) {
  memcpy(&parked->context, context, sizeof *context);
}
static void unpack(ucontext_t *context, const cu_parked_context *parked) {
  memcpy(context, &parked->context, sizeof *context);
}
#if defined(__aarch64__)
static char *saved_stack_pointer(const ucontext_t *context) {
  return (char *)context->uc_mcontext.sp;
}
static void set_stack_pointer(ucontext_t *context, char *stack_pointer) { (void)context, (void)stack_pointer; }
#else
#error "shared stacks need the saved stack pointer's place in ucontext_t for this architecture"
#endif
#endif

static void drop_saved(cu_fiber *fiber);

cu_shared_stack *cu_shared_stack_new(size_t stack_size, size_t guard_size) {
  size_t page = cu_page_size();
  size_t usable = cu_round_up(stack_size, page);
  size_t guard = cu_round_up(guard_size, page);
  if (usable == 0 || guard + usable < usable) {
    errno = EINVAL;
    return NULL;
  }
  cu_shared_stack *stack = calloc(1, sizeof *stack);
  if (stack == NULL) return NULL;
  void *mapping = mmap(NULL, guard + usable, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED || (guard > 0 && mprotect(mapping, guard, PROT_NONE) != 0) ||
      getcontext(&stack->self) != 0) {
    int saved = errno;
    if (mapping != MAP_FAILED) munmap(mapping, guard + usable);
    free(stack);
    errno = saved;
    return NULL;
  }
  stack->mapping = mapping;
  stack->mapping_size = guard + usable;
  stack->base = (char *)mapping + guard;
  stack->top = stack->base + usable;
  stack->self.uc_stack.ss_sp = stack->base;
  stack->self.uc_stack.ss_size = usable;
  stack->self.uc_link = NULL;
  // The mask and control words of the thread making the stack, as getcontext gives a fiber
  // with its own stack: every fiber here starts with them.
  pack(&stack->start, &stack->self);
  return stack;
}

void cu_shared_stack_free(cu_shared_stack *stack) {
  munmap(stack->mapping, stack->mapping_size);
  free(stack);
}

cu_fiber *cu_fiber_new_shared(cu_shared_stack *stack) {
  // The record ends where a fiber with its own stack goes on with its mapping, name and contexts.
  cu_fiber *fiber = calloc(1, offsetof(cu_fiber, delta) + sizeof fiber->delta);
  if (fiber == NULL) return NULL;
  fiber->stack_size = (size_t)(stack->top - stack->base);
  fiber->shared = stack;
  fiber->self_context = &stack->self;
  fiber->resumer = &stack->resumer;
  stack->fibers++;
  cu_san_fiber_created(&fiber->sanitizer);
  return fiber;
}

void cu_fiber_free(cu_fiber *fiber) {
  if (fiber->shared == NULL) abort();  // a slab's fiber goes back to its slab, never alone
  cu_san_fiber_destroyed(&fiber->sanitizer);
  fiber->shared->fibers--;
  if (fiber->shared->occupant == fiber) fiber->shared->occupant = NULL;
  drop_saved(fiber);
  free(fiber->label);
  free(fiber);
}

void cu_shared_fiber_set_label(cu_fiber *fiber, const char *name) {
  free(fiber->label);
  fiber->label = NULL;
  if (name == NULL || name[0] == '\0') return;
  enum { capacity = 64 };
  fiber->label = malloc(capacity);  // no report names it if this fails; nothing else changes
  if (fiber->label != NULL) cu_copy_label(fiber->label, capacity, name);
}

size_t cu_fiber_saved_size(const cu_fiber *fiber) {
  if (fiber->shared == NULL || fiber->shared->occupant == fiber || fiber->fresh) return 0;
  return fiber->saved_size;
}

static _Noreturn void stop(const char *message) {
  fprintf(stderr, "swift-coroutines: %s\n", message);
  abort();
}

// A parking stored against one of its stack's images of the same depth: a bit per word of the
// image (set: the word differs), then the differing words in order.
typedef struct cu_stack_delta {
  cu_stack_image *reference;
  unsigned long long word[];
} cu_stack_delta;

enum {
  parked_words = sizeof(cu_parked_context) / 8,
  // Parkings up to 256 × 64 words (128 KiB) may be stored as differences: their bit map is
  // worked out on the resumer's stack first (2 KiB at most).
  delta_map_words_max = 256,
};
_Static_assert(sizeof(cu_parked_context) % 8 == 0, "parked contexts are stored as whole words");

static size_t bitmap_words(size_t words) { return (words + 63) / 64; }

// Lets go of a fiber's hold on `image`. The stack's own places do not hold their images: an
// image lives only as long as a fiber's saved words need it, and its place is freed with it.
static void release(cu_shared_stack *stack, cu_stack_image *image) {
  if (--image->references > 0) return;
  for (unsigned i = 0; i < cu_stack_images; i++) {
    if (stack->images[i] == image) stack->images[i] = NULL;
  }
  free(image);
}

// Lets go of the fiber's saved words, and of the image they were stored against.
static void drop_saved(cu_fiber *fiber) {
  if (fiber->saved == NULL) return;
  if (fiber->delta) {
    release(fiber->shared, ((cu_stack_delta *)fiber->saved)->reference);
    free(fiber->saved);
  } else {
    release(fiber->shared, fiber->saved);
  }
  fiber->saved = NULL;
  fiber->saved_size = 0;
  fiber->delta = 0;
}

// A buffer of exactly `size` bytes for the fiber's next saved words: the one it had when that is
// the same size and kind and nobody else holds it (the image it was stored against released).
static void *saved_buffer(cu_fiber *fiber, size_t size, unsigned char delta) {
  void *old = fiber->saved;
  if (old != NULL && fiber->saved_size == size && fiber->delta == delta) {
    if (delta) {
      release(fiber->shared, ((cu_stack_delta *)old)->reference);
      return old;
    }
    if (((cu_stack_image *)old)->references == 1) return old;
  }
  drop_saved(fiber);
  void *buffer = malloc(size);
  if (buffer == NULL) stop("out of memory saving a shared-stack coroutine");
  fiber->saved = buffer;
  fiber->saved_size = (unsigned)size;
  fiber->delta = delta;
  return buffer;
}

// One bit per word of `count` words from `first` (bit 0 of a map word is its lowest word): set
// where `words` and `reference` differ. Eight words per step where the vector units allow, each
// step's eight bits or-ed into the map where they fall, spilling into the next map word when
// they straddle two: a bit per word assembled one at a time was a fifth of a switch between
// shared-stack fibers parked at the same depth, and so were word-at-a-time tails at every
// 64-word boundary of a parking whose frames start mid-word, after its registers.
#define CU_MARK_DIFFERENCES(name, attributes, eight_differing)                                    \
  CU_UNCHECKED attributes static void name(const unsigned long long *words,                      \
                                           const unsigned long long *reference, size_t count,    \
                                           size_t first, unsigned long long *map) {              \
    size_t i = 0;                                                                                \
    for (; i + 8 <= count; i += 8) {                                                             \
      unsigned long long differ = eight_differing(words + i, reference + i);                     \
      size_t bit = first + i;                                                                    \
      map[bit / 64] |= differ << (bit % 64);                                                     \
      if (bit % 64 > 56) map[bit / 64 + 1] |= differ >> (64 - bit % 64);                         \
    }                                                                                            \
    for (; i < count; i++) {                                                                     \
      size_t bit = first + i;                                                                    \
      map[bit / 64] |= (unsigned long long)(words[i] != reference[i]) << (bit % 64);             \
    }                                                                                            \
  }

// Eight differing-word bits, in plain C.
CU_UNCHECKED static inline unsigned eight_differing_plain(const unsigned long long *words,
                                                          const unsigned long long *reference) {
  unsigned bits = 0;
  for (int j = 0; j < 8; j++) bits |= (unsigned)(words[j] != reference[j]) << j;
  return bits;
}

#if defined(__SSE2__)
// SSE2 compares 32-bit halves: a word is the same when both of its halves are.
CU_UNCHECKED static inline unsigned eight_differing_sse2(const unsigned long long *words,
                                                         const unsigned long long *reference) {
  unsigned same = 0;
  for (int j = 0; j < 4; j++) {
    __m128i halves = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(words + 2 * j)),
                                     _mm_loadu_si128((const __m128i *)(reference + 2 * j)));
    halves = _mm_and_si128(halves, _mm_shuffle_epi32(halves, 0xb1));
    same |= (unsigned)_mm_movemask_pd(_mm_castsi128_pd(halves)) << (2 * j);
  }
  return same ^ 0xffu;
}
CU_MARK_DIFFERENCES(mark_differences_baseline, , eight_differing_sse2)
#else
CU_MARK_DIFFERENCES(mark_differences_baseline, , eight_differing_plain)
#endif

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <cpuid.h>
#include <immintrin.h>
// AVX2 compares whole words, four at a time: half the work of SSE2 again.
__attribute__((target("avx2"))) CU_UNCHECKED static inline unsigned eight_differing_avx2(
    const unsigned long long *words, const unsigned long long *reference) {
  __m256i low = _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)words),
                                   _mm256_loadu_si256((const __m256i *)reference));
  __m256i high = _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)(words + 4)),
                                    _mm256_loadu_si256((const __m256i *)(reference + 4)));
  unsigned same = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(low)) |
                  (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(high)) << 4;
  return same ^ 0xffu;
}
CU_MARK_DIFFERENCES(mark_differences_avx2, __attribute__((target("avx2"))), eight_differing_avx2)

// Whether the processor has AVX2 and the kernel saves its registers (XCR0's SSE and AVX bits).
static int processor_has_avx2(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return 0;
  unsigned xcr0_low, xcr0_high;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  if ((xcr0_low & 6) != 6) return 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
}

// 0 not asked yet, 1 yes, 2 no: any thread may ask first; they all find the same answer.
static int avx2_answer = 0;

static int use_avx2(void) {
  int answer = __atomic_load_n(&avx2_answer, __ATOMIC_RELAXED);
  if (answer == 0) {
    answer = processor_has_avx2() ? 1 : 2;
    __atomic_store_n(&avx2_answer, answer, __ATOMIC_RELAXED);
  }
  return answer == 1;
}
#endif

void cu_shared_stack_mark_differences_baseline(const unsigned long long *words,
                                               const unsigned long long *reference, size_t count,
                                               size_t first, unsigned long long *map) {
  mark_differences_baseline(words, reference, count, first, map);
}

void cu_shared_stack_mark_differences(const unsigned long long *words,
                                      const unsigned long long *reference, size_t count,
                                      size_t first, unsigned long long *map) {
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
  if (use_avx2()) {
    mark_differences_avx2(words, reference, count, first, map);
    return;
  }
#endif
  mark_differences_baseline(words, reference, count, first, map);
}

// Bits set in `map`'s first `count` words.
static size_t count_bits(const unsigned long long *map, size_t count) {
  size_t bits = 0;
  for (size_t i = 0; i < count; i++) bits += (size_t)__builtin_popcountll(map[i]);
  return bits;
}

// The bits of a map's first word that stand for registers, and those that stand for frames.
static const unsigned long long register_bits = (1ull << parked_words) - 1;
_Static_assert(parked_words < 64, "the registers' bits fit in the first word of a map");

// Appends at `out` the words whose bits are set in `map`: registers first, then frames.
CU_UNCHECKED static void gather_differences(const unsigned long long *registers,
                                            const unsigned long long *frames,
                                            const unsigned long long *map, size_t map_words,
                                            unsigned long long *out) {
  for (unsigned long long mask = map[0] & register_bits; mask != 0; mask &= mask - 1) {
    *out++ = registers[__builtin_ctzll(mask)];
  }
  unsigned long long mask = map[0] & ~register_bits;
  for (size_t slot = 0; slot < map_words; mask = ++slot < map_words ? map[slot] : 0) {
    for (; mask != 0; mask &= mask - 1) {
      *out++ = frames[slot * 64 + (size_t)__builtin_ctzll(mask) - parked_words];
    }
  }
}

// The inverse, over words already copied from the reference.
CU_UNCHECKED static void scatter_differences(unsigned long long *registers,
                                             unsigned long long *frames,
                                             const unsigned long long *map, size_t map_words,
                                             const unsigned long long *in) {
  for (unsigned long long mask = map[0] & register_bits; mask != 0; mask &= mask - 1) {
    registers[__builtin_ctzll(mask)] = *in++;
  }
  unsigned long long mask = map[0] & ~register_bits;
  for (size_t slot = 0; slot < map_words; mask = ++slot < map_words ? map[slot] : 0) {
    for (; mask != 0; mask &= mask - 1) {
      frames[slot * 64 + (size_t)__builtin_ctzll(mask) - parked_words] = *in++;
    }
  }
}

// The stack's reference image for parkings of `words` words, or NULL.
static cu_stack_image *reference_for(cu_shared_stack *stack, size_t words) {
  for (unsigned i = 0; i < cu_stack_images; i++) {
    if (stack->images[i] != NULL && stack->images[i]->words == words) return stack->images[i];
  }
  return NULL;
}

// Makes `image` the stack's reference for its depth, in place of the old one for that depth,
// else in a free place, else in place of the oldest.
static void keep_reference(cu_shared_stack *stack, cu_stack_image *image) {
  unsigned place = cu_stack_images;
  for (unsigned i = 0; i < cu_stack_images && place == cu_stack_images; i++) {
    if (stack->images[i] != NULL && stack->images[i]->words == image->words) place = i;
  }
  for (unsigned i = 0; i < cu_stack_images && place == cu_stack_images; i++) {
    if (stack->images[i] == NULL) place = i;
  }
  if (place == cu_stack_images) {
    place = stack->next_image;
    stack->next_image = (stack->next_image + 1) % cu_stack_images;
  }
  stack->images[place] = image;
}

// Saves the switched-out occupant's live registers and used stack words. Coroutines parked at
// the same await have the same depth and mostly the same words (return addresses, saved frame
// pointers, which are absolute addresses on the shared stack, type metadata), so the stack keeps
// an image per depth and a parking that differs from it in at most half of its words keeps only
// those words and a bit per word; any other becomes a whole image, and the reference for its
// depth. Either way in a buffer of exactly its size. A stack carrying fewer fibers than
// CU_SHARED_DELTA_MIN_FIBERS stores whole images only: differences could save a few KiB there
// at most, not worth the comparing and scattering they add to every switch between two of them.
static void save(cu_fiber *occupant) {
  cu_shared_stack *stack = occupant->shared;
  char *sp = saved_stack_pointer(&stack->self);
  if (sp < stack->base || sp > stack->top || (uintptr_t)sp % 8 != 0) {
    stop("a shared-stack fiber's saved stack pointer lies off its stack");
  }
  size_t used_words = (size_t)(stack->top - sp) / 8;
  size_t words = parked_words + used_words;
  if (8 * words + 16 > UINT_MAX) stop("a shared-stack coroutine used more than 4 GiB of stack");
  cu_parked_context parked;
  pack(&parked, &stack->self);
  const unsigned long long *registers = (const unsigned long long *)&parked;
  const unsigned long long *frames = (const unsigned long long *)sp;

  cu_stack_image *reference = reference_for(stack, words);
  size_t map_words = bitmap_words(words);
  if (reference != NULL && map_words <= delta_map_words_max &&
      stack->fibers >= CU_SHARED_DELTA_MIN_FIBERS) {
    unsigned long long map[delta_map_words_max];
    memset(map, 0, 8 * map_words);
    cu_shared_stack_mark_differences(registers, reference->word, parked_words, 0, map);
    cu_shared_stack_mark_differences(frames, reference->word + parked_words, used_words,
                                     parked_words, map);
    size_t differing = count_bits(map, map_words);
    if (2 * (map_words + differing) <= words) {
      reference->references++;  // before the old delta lets go of it (it may be the same image)
      cu_stack_delta *delta =
          saved_buffer(occupant, sizeof *delta + 8 * (map_words + differing), 1);
      delta->reference = reference;
      memcpy(delta->word, map, 8 * map_words);
      gather_differences(registers, frames, map, map_words, delta->word + map_words);
      return;
    }
  }
  cu_stack_image *image = saved_buffer(occupant, sizeof *image + 8 * words, 0);
  image->references = 1;
  image->words = (unsigned)words;
  memcpy(image->word, registers, sizeof parked);
  copy_bytes((char *)(image->word + parked_words), sp, 8 * used_words);
  keep_reference(stack, image);
}

// Puts a parked fiber's registers and words back where they came from.
static void restore(cu_fiber *fiber) {
  cu_shared_stack *stack = fiber->shared;
  const cu_stack_image *image;
  const unsigned long long *bitmap = NULL;
  if (fiber->delta) {
    const cu_stack_delta *delta = fiber->saved;
    image = delta->reference;
    bitmap = delta->word;
  } else {
    image = fiber->saved;
  }
  size_t used_words = image->words - parked_words;
  char *sp = stack->top - 8 * used_words;
  cu_parked_context parked;
  memcpy(&parked, image->word, sizeof parked);
  copy_bytes(sp, (const char *)(image->word + parked_words), 8 * used_words);
  if (bitmap != NULL) {
    size_t map_words = bitmap_words(image->words);
    scatter_differences((unsigned long long *)&parked, (unsigned long long *)sp, bitmap,
                        map_words, bitmap + map_words);
  }
  unpack(&stack->self, &parked);
  set_stack_pointer(&stack->self, sp);
}

static void shared_trampoline(cu_fiber *fiber);
#if !defined(__x86_64__)
static void shared_trampoline_split(unsigned int high, unsigned int low);
#endif

// Makes a prepared fiber's starting context in the stack's: the starting control words and mask,
// and a first frame at the very top of the (now free) stack. On x86_64 the context is set up by
// hand, since every byte under the trampoline is copied out with each suspension: the pointer
// travels whole in the first argument register and no return frame is built, because the
// trampoline never returns. Elsewhere makecontext builds it (the pointer split into two ints).
static void make_start_context(cu_fiber *fiber) {
  cu_shared_stack *stack = fiber->shared;
  unpack(&stack->self, &stack->start);
#if defined(__x86_64__)
  greg_t *gregs = stack->self.uc_mcontext.gregs;
  gregs[REG_RIP] = (greg_t)(uintptr_t)shared_trampoline;
  gregs[REG_RSP] = (greg_t)(uintptr_t)(stack->top - 8);  // as if called: rsp + 8 is 16-aligned
  gregs[REG_RBP] = 0;                                     // ends the frame chain for debuggers
  gregs[REG_RDI] = (greg_t)(uintptr_t)fiber;
#else
  uintptr_t address = (uintptr_t)fiber;
  stack->self.uc_stack.ss_sp = stack->base;
  stack->self.uc_stack.ss_size = (size_t)(stack->top - stack->base);
  stack->self.uc_link = NULL;
  makecontext(&stack->self, (void (*)(void))shared_trampoline_split, 2,
              (unsigned int)(address >> 32), (unsigned int)(address & 0xffffffffu));
#endif
  fiber->fresh = 0;
}

void cu_shared_fiber_armed(cu_fiber *fiber) {
  // A fiber is prepared only when new or finished, so it is not the occupant and owns no bytes.
  fiber->fresh = 1;
}

void cu_shared_stack_acquire(cu_fiber *fiber) {
  cu_shared_stack *stack = fiber->shared;
  cu_fiber *occupant = stack->occupant;
  if (occupant == fiber) return;
  char *here = (char *)__builtin_frame_address(0);
  if (here >= stack->base && here < stack->top) {
    stop("a coroutine on a shared stack tried to resume another coroutine on the same stack");
  }
  if (occupant != NULL) save(occupant);
#if defined(CU_ASAN)
  __asan_unpoison_memory_region(stack->base, (size_t)(stack->top - stack->base));
#endif
  if (fiber->fresh) {
    make_start_context(fiber);
  } else {
    restore(fiber);
  }
  stack->occupant = fiber;
}

// Gives up the stack when the fiber's entry has returned, so its dead frames are never saved.
static void leave(cu_fiber *fiber) {
  if (fiber->shared->occupant == fiber) fiber->shared->occupant = NULL;
  drop_saved(fiber);
}

// The last switch out of a finished fiber: the one this thread is running. Kept out of the
// trampoline, whose frame stays under every frame of the fiber's body and so is copied out with
// each of its suspensions; not inlined, so the thread-local is read on the thread that runs it.
CU_SWITCH_CODE __attribute__((noinline, noreturn)) static void finish(void) {
  cu_fiber *fiber = cu_thread.running_fiber;
  cu_shared_stack *stack = fiber->shared;
  leave(fiber);
  cu_fiber_leave_thread(fiber);
  cu_san_fiber_leaving(&fiber->sanitizer, 1);
  cu_current_switch(&stack->self, &stack->resumer);
  abort();  // a finished fiber is prepared again before it is resumed again
}

// A shared-stack fiber's first frame. It keeps nothing across the body (`finish` finds the fiber
// again), so its frame is no more than the return address slot and the saved frame pointer.
CU_SWITCH_CODE static void shared_trampoline(cu_fiber *fiber) {
  cu_san_fiber_arrived(&fiber->sanitizer);
  fiber->entry(fiber->argument);
  finish();
}

#if !defined(__x86_64__)
CU_SWITCH_CODE static void shared_trampoline_split(unsigned int high, unsigned int low) {
  shared_trampoline((cu_fiber *)(((uintptr_t)high << 32) | (uintptr_t)low));
}
#endif
