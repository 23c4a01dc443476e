// Counts the heap allocations of the process it is preloaded into (LD_PRELOAD), for the HTTP
// benchmark's allocations-per-request figure: malloc, calloc, realloc and the aligned
// allocators each add one to a counter, then call glibc's own implementation (its __libc_
// entry points, so that no dlsym is needed, which itself allocates). free is not interposed:
// the blocks come from glibc's allocator either way.
//
// SIGUSR2 writes the count so far, in decimal and a newline, to the file named by
// MALLOC_COUNT_FILE (replacing what was there): the benchmark reads it before and after a run.
// Built by the benchmark at run time: cc -shared -fPIC -O2 -o malloc-count.so malloc-count.c
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static unsigned long long allocations;
static const char *count_file;

static inline void counted(void) { __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED); }

void *malloc(size_t size) { counted(); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { counted(); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { counted(); return __libc_realloc(pointer, size); }
void *memalign(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) {
  counted();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void **result, size_t alignment, size_t size) {
  counted();
  void *pointer = __libc_memalign(alignment, size);
  if (pointer == NULL) return ENOMEM;
  *result = pointer;
  return 0;
}

// Only async-signal-safe calls: open, write, close, and digits formatted by hand.
static void report(int signal_number) {
  (void)signal_number;
  if (count_file == NULL) return;
  char digits[32];
  int length = 0;
  unsigned long long value = __atomic_load_n(&allocations, __ATOMIC_RELAXED);
  char reversed[32];
  do { reversed[length++] = (char)('0' + value % 10); value /= 10; } while (value > 0);
  for (int index = 0; index < length; index++) digits[index] = reversed[length - 1 - index];
  digits[length++] = '\n';
  int saved = errno;
  int fd = open(count_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ssize_t ignored = write(fd, digits, (size_t)length);
    (void)ignored;
    close(fd);
  }
  errno = saved;
}

__attribute__((constructor)) static void install(void) {
  count_file = getenv("MALLOC_COUNT_FILE");
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = report;
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &action, NULL);
}
