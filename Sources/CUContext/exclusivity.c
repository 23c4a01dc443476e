// Skipping Swift's exclusivity-set swap when it would do nothing.
//
// Every resume wraps the switch in swift_task_enterThreadLocalContext and
// swift_task_exitThreadLocalContext, so that accesses begun on a coroutine's stack travel with
// it (see context.c). Both calls leave everything as it is when neither the fiber's saved set nor
// the thread's set has an access in flight, which is nearly every switch; yet each pays a call
// into libswiftCore and a __tls_get_addr lookup, about a quarter of a bare resume + suspend.
//
// The runtime exports no way to read the thread's set, so this file finds it once: it begins two
// nested tracked accesses through the exported swift_beginAccess and looks for the one word in
// the runtime's thread-local block that follows the head of the set through every step. Each
// thread then keeps that word's address in a thread-local of its own. If the word is not found
// exactly once (another runtime layout, checking disabled, a static TLS model we do not know),
// the switch keeps calling the runtime every time, as before.
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fiber.h"

// Exported by libswiftCore; `buffer` is the compiler's three-word scratch record.
extern void swift_beginAccess(void *pointer, void *buffer, uintptr_t flags, void *pc);
extern void swift_endAccess(void *buffer);

enum { access_modify = 0x1, access_tracking = 0x20 };

// Where the head was found: the module's TLS block, and the word's offset in it.
static size_t head_module;
static size_t head_offset;
static int head_found;
static pthread_once_t head_once = PTHREAD_ONCE_INIT;

struct scan {
  uintptr_t needle;
  size_t matches;
  size_t module;
  uintptr_t *word;
  uintptr_t *block;
};

// With a needle: records every word of every module's thread-local block (for this thread) that
// equals it. Without: finds this thread's block of module `module`.
static int scan_module(struct dl_phdr_info *info, size_t size, void *context) {
  (void)size;
  struct scan *scan = context;
  if (info->dlpi_tls_modid == 0 || info->dlpi_tls_data == NULL) return 0;
  if (scan->needle == 0) {
    if (info->dlpi_tls_modid != scan->module) return 0;
    scan->block = info->dlpi_tls_data;
    return 1;
  }
  size_t bytes = 0;
  for (int index = 0; index < info->dlpi_phnum; index++) {
    if (info->dlpi_phdr[index].p_type == PT_TLS) bytes = info->dlpi_phdr[index].p_memsz;
  }
  uintptr_t *block = info->dlpi_tls_data;
  for (size_t slot = 0; slot < bytes / sizeof(uintptr_t); slot++) {
    if (block[slot] != scan->needle) continue;
    scan->matches++;
    scan->module = info->dlpi_tls_modid;
    scan->word = &block[slot];
    scan->block = block;
  }
  return 0;
}

static void locate_head(void) {
  // Two distinct addresses to access: the probe's own accesses never conflict with the caller's.
  static char outer_target, inner_target;
  uintptr_t outer[3] = {0}, inner[3] = {0};
  swift_beginAccess(&outer_target, outer, access_modify | access_tracking, NULL);
  struct scan scan = {.needle = (uintptr_t)outer};
  dl_iterate_phdr(scan_module, &scan);
  uintptr_t *word = scan.matches == 1 ? scan.word : NULL;
  // The record's third word links to the previous head (its low bit is the access kind).
  uintptr_t previous = outer[2] & ~(uintptr_t)1;
  int follows = word != NULL && *word == (uintptr_t)outer;
  swift_beginAccess(&inner_target, inner, access_modify | access_tracking, NULL);
  follows = follows && *word == (uintptr_t)inner;
  swift_endAccess(inner);
  follows = follows && *word == (uintptr_t)outer;
  swift_endAccess(outer);
  follows = follows && *word == previous;
  if (!follows) return;
  head_module = scan.module;
  head_offset = (size_t)((char *)word - (char *)scan.block);
  head_found = 1;
}

// Where a thread whose head could not be found points its head: a word that is never NULL,
// so that every switch calls the runtime.
static void *not_found = &not_found;

void **cu_exclusivity_find_head(void) {
  pthread_once(&head_once, locate_head);
  if (!head_found) return &not_found;
  struct scan scan = {.module = head_module};
  dl_iterate_phdr(scan_module, &scan);
  if (scan.block == NULL) return &not_found;
  return (void **)((char *)scan.block + head_offset);
}

void cu_exclusivity_force_runtime_swaps(int force) {
  cu_thread.exclusivity_head = force ? &not_found : cu_exclusivity_find_head();
}

int cu_exclusivity_swap_skippable(void) {
  pthread_once(&head_once, locate_head);
  return head_found;
}
