// echoload: a loopback echo load generator, one thread on epoll.
//
//   echoload --port P [--host 127.0.0.1] --connections N --seconds S [--warmup W] [--size B]
//            [--server-pid PID] [--cpu C --server-cpu S]
//   echoload --port P --connections N --idle
//
// Load: N non-blocking connections, each sends B bytes, waits until all B have come back,
// checks them, and sends again at once (one request in flight per connection). Every
// connection first completes one request (so the server has accepted them all), then the
// warm-up runs W seconds unrecorded, then S seconds are recorded. Prints one line:
//   requests_per_second=R p50_us=X p99_us=Y requests=Q errors=E connections=N
// With --server-pid, also `server_cpu_us=C`: the server's CPU time (user and system, all its
// threads, from /proc/PID/stat) per recorded request over the recorded window.
// --cpu and --server-cpu pin this generator to CPU C and every thread of the server to CPU S,
// so that each has a core of its own: unpinned, the scheduler's wake-up affinity kept moving
// the two onto one core, and the rate halved.
// `load_cpu_percent=L` is this generator's own CPU use over the recorded window: near 100, the
// generator, not the server, may be what limits the rate.
// Latency is from the request's send to its last byte's arrival (CLOCK_MONOTONIC), kept in a
// log-linear histogram (64 sub-buckets per power of two: within 1.6 %).
//
// Idle: N connections, nothing sent; prints `connected=N` once all have connected and keeps
// them open until standard input closes or a signal arrives.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { SUB_BITS = 6, SUBS = 1 << SUB_BITS, BUCKETS = 64 * SUBS };

typedef struct {
  uint64_t counts[BUCKETS];
  uint64_t total;
} histogram;

// Values below 2^SUB_BITS ns land in exact buckets; above, the top SUB_BITS bits after the
// leading one pick the sub-bucket of the value's power of two.
static int bucket_of(uint64_t ns) {
  if (ns < SUBS) return (int)ns;
  int high = 63 - __builtin_clzll(ns);
  int shift = high - SUB_BITS;
  return (shift + 1) * SUBS + (int)((ns >> shift) & (SUBS - 1));
}

static double bucket_middle(int index) {
  if (index < SUBS) return index;
  int shift = index / SUBS - 1;
  uint64_t low = ((uint64_t)SUBS + (uint64_t)(index % SUBS)) << shift;
  return (double)low + (double)((uint64_t)1 << shift) / 2;
}

static double percentile_ns(const histogram *h, double fraction) {
  if (h->total == 0) return 0;
  uint64_t rank = (uint64_t)(fraction * (double)h->total);
  if (rank >= h->total) rank = h->total - 1;
  uint64_t seen = 0;
  for (int i = 0; i < BUCKETS; i++) {
    seen += h->counts[i];
    if (seen > rank) return bucket_middle(i);
  }
  return 0;
}

static uint64_t own_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

typedef enum { CONNECTING, SENDING, RECEIVING, DEAD } connection_state;

typedef struct {
  int fd;
  connection_state state;
  size_t sent, received;
  uint64_t started_ns;
  int answered;  // completed at least one request
} connection;

static struct {
  const char *host;
  int port, connections, size, idle, server_pid, cpu, server_cpu;
  double seconds, warmup;
} options = {"127.0.0.1", 0, 1000, 64, 0, 0, -1, -1, 4, 1};

static volatile sig_atomic_t stop_requested;
static void on_signal(int signal_number) {
  (void)signal_number;
  stop_requested = 1;
}

static void usage(void) {
  fprintf(stderr,
          "usage: echoload --port P [--host A] [--connections N] [--seconds S] [--warmup W] "
          "[--size B] [--server-pid PID] [--cpu C --server-cpu S] [--idle]\n");
  exit(2);
}

static void parse(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *name = argv[i];
    if (strcmp(name, "--idle") == 0) {
      options.idle = 1;
      continue;
    }
    if (i + 1 >= argc) usage();
    const char *value = argv[++i];
    if (strcmp(name, "--port") == 0) options.port = atoi(value);
    else if (strcmp(name, "--host") == 0) options.host = value;
    else if (strcmp(name, "--connections") == 0) options.connections = atoi(value);
    else if (strcmp(name, "--seconds") == 0) options.seconds = atof(value);
    else if (strcmp(name, "--warmup") == 0) options.warmup = atof(value);
    else if (strcmp(name, "--size") == 0) options.size = atoi(value);
    else if (strcmp(name, "--server-pid") == 0) options.server_pid = atoi(value);
    else if (strcmp(name, "--cpu") == 0) options.cpu = atoi(value);
    else if (strcmp(name, "--server-cpu") == 0) options.server_cpu = atoi(value);
    else usage();
  }
  if ((options.server_cpu >= 0 && options.server_pid <= 0) || options.cpu >= CPU_SETSIZE ||
      options.server_cpu >= CPU_SETSIZE)
    usage();
  if (options.port <= 0 || options.port > 65535 || options.connections <= 0 || options.size <= 0 ||
      options.seconds <= 0 || options.warmup < 0)
    usage();
}

static void raise_descriptor_limit(void) {
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// The CPU time, in clock ticks, that process `pid` has used so far (utime + stime); -1 if
// unknown. The command name in field 2 may hold spaces, so the fields are counted after its ')'.
static long long cpu_ticks(int pid) {
  if (pid <= 0) return -1;
  char path[64], text[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *file = fopen(path, "r");
  if (!file) return -1;
  size_t length = fread(text, 1, sizeof text - 1, file);
  fclose(file);
  text[length] = 0;
  char *field = strrchr(text, ')');
  if (!field) return -1;
  unsigned long long user = 0, system = 0;
  // After ')': state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt,
  // cmajflt, utime, stime.
  if (sscanf(field + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &user,
             &system) != 2)
    return -1;
  return (long long)(user + system);
}

static void pin(pid_t thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(thread, sizeof set, &set) != 0)
    fprintf(stderr, "echoload: cannot pin thread %d to CPU %d: %s\n", (int)thread, cpu,
            strerror(errno));
}

// Every thread the server has now; threads it starts later inherit their creator's CPU.
static void pin_server(int pid, int cpu) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", pid);
  DIR *tasks = opendir(path);
  if (!tasks) {
    fprintf(stderr, "echoload: no process %d to pin\n", pid);
    return;
  }
  for (struct dirent *entry; (entry = readdir(tasks)) != NULL;)
    if (entry->d_name[0] != '.') pin((pid_t)atoi(entry->d_name), cpu);
  closedir(tasks);
}

static int epoll_fd;
static struct sockaddr_in server;

static void watch(connection *c, uint32_t events, int operation) {
  struct epoll_event event = {.events = events, .data.ptr = c};
  if (epoll_ctl(epoll_fd, operation, c->fd, &event) != 0) {
    perror("echoload: epoll_ctl");
    exit(1);
  }
}

static int open_connection(connection *c) {
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) {
    perror("echoload: socket");
    return -1;
  }
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c->fd, (struct sockaddr *)&server, sizeof server) != 0 && errno != EINPROGRESS) {
    perror("echoload: connect");
    close(c->fd);
    return -1;
  }
  c->state = CONNECTING;
  watch(c, EPOLLOUT, EPOLL_CTL_ADD);
  return 0;
}

static int connect_error(connection *c) {
  int error = 0;
  socklen_t length = sizeof error;
  if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
  return error;
}

static void run_idle(connection *all) {
  int connected = 0, failed = 0;
  while (connected + failed < options.connections && !stop_requested) {
    struct epoll_event events[256];
    int ready = epoll_wait(epoll_fd, events, 256, 1000);
    for (int i = 0; i < ready; i++) {
      connection *c = events[i].data.ptr;
      if (connect_error(c) != 0) {
        failed++;
        c->state = DEAD;
        close(c->fd);
        continue;
      }
      connected++;
      c->state = RECEIVING;
      epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    }
  }
  printf("connected=%d errors=%d\n", connected, failed);
  fflush(stdout);
  char byte;
  while (!stop_requested && read(STDIN_FILENO, &byte, 1) > 0) {
  }
  for (int i = 0; i < options.connections; i++)
    if (all[i].state != DEAD) close(all[i].fd);
}

static histogram latencies;
static unsigned char *request;
static unsigned char *reply;
static uint64_t recorded_requests;
static int errors;
static int recording;

static void fail(connection *c) {
  if (c->state == DEAD) return;
  errors++;
  c->state = DEAD;
  epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
}

// Sends what is left of the current request; waits for writable only if the socket is full.
static void send_request(connection *c) {
  if (c->state != SENDING) {
    c->state = SENDING;
    c->sent = 0;
    c->received = 0;
    c->started_ns = now_ns();
  }
  while (c->sent < (size_t)options.size) {
    ssize_t n = send(c->fd, request + c->sent, (size_t)options.size - c->sent, MSG_NOSIGNAL);
    if (n > 0) {
      c->sent += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      watch(c, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
      return;
    }
    fail(c);
    return;
  }
  c->state = RECEIVING;
}

static void receive_reply(connection *c) {
  for (;;) {
    ssize_t n = recv(c->fd, reply + c->received, (size_t)options.size - c->received, 0);
    if (n > 0) {
      if (memcmp(reply + c->received, request + c->received, (size_t)n) != 0) {
        fail(c);
        return;
      }
      c->received += (size_t)n;
      if (c->received < (size_t)options.size) continue;
      if (recording) {
        latencies.counts[bucket_of(now_ns() - c->started_ns)]++;
        latencies.total++;
        recorded_requests++;
      }
      c->answered = 1;
      send_request(c);
      return;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    fail(c);  // end of stream or a reset: the server dropped the connection
    return;
  }
}

static void handle(connection *c, uint32_t events) {
  if (c->state == DEAD) return;
  if (c->state == CONNECTING) {
    if (connect_error(c) != 0) {
      fail(c);
      return;
    }
    watch(c, EPOLLIN, EPOLL_CTL_MOD);
    send_request(c);
    return;
  }
  if (c->state == SENDING && (events & EPOLLOUT)) {
    watch(c, EPOLLIN, EPOLL_CTL_MOD);
    send_request(c);
    if (c->state == SENDING) return;
  }
  if (c->state == RECEIVING && (events & (EPOLLIN | EPOLLERR | EPOLLHUP))) receive_reply(c);
}

static void run_load(connection *all) {
  request = malloc((size_t)options.size);
  reply = malloc((size_t)options.size);
  for (int i = 0; i < options.size; i++) request[i] = (unsigned char)('a' + i % 26);

  // Until every connection has had one answer (the server has accepted them all), then the
  // warm-up, then the recorded window.
  enum { ESTABLISHING, WARMING, MEASURING } phase = ESTABLISHING;
  uint64_t phase_end = now_ns() + 30ull * 1000000000u;  // the time allowed to establish
  uint64_t measured_start = 0, measured_end = 0;
  long long server_ticks_start = -1, server_ticks_end = -1;
  uint64_t own_cpu_start = 0, own_cpu_end = 0;
  struct epoll_event events[512];
  int answered = 0;
  while (!stop_requested) {
    int ready = epoll_wait(epoll_fd, events, 512, 100);
    if (ready < 0 && errno != EINTR) {
      perror("echoload: epoll_wait");
      exit(1);
    }
    for (int i = 0; i < ready; i++) handle(events[i].data.ptr, events[i].events);
    uint64_t now = now_ns();
    if (phase == ESTABLISHING) {
      answered = 0;
      int dead = 0;
      for (int i = 0; i < options.connections; i++) {
        answered += all[i].answered;
        dead += all[i].state == DEAD;
      }
      if (answered + dead == options.connections || now >= phase_end) {
        phase = WARMING;
        phase_end = now + (uint64_t)(options.warmup * 1e9);
      }
    } else if (phase == WARMING && now >= phase_end) {
      phase = MEASURING;
      recording = 1;
      measured_start = now;
      server_ticks_start = cpu_ticks(options.server_pid);
      own_cpu_start = own_cpu_ns();
      phase_end = now + (uint64_t)(options.seconds * 1e9);
    } else if (phase == MEASURING && now >= phase_end) {
      measured_end = now;
      server_ticks_end = cpu_ticks(options.server_pid);
      own_cpu_end = own_cpu_ns();
      break;
    }
  }
  if (measured_end == 0) measured_end = now_ns();
  double elapsed = measured_start ? (double)(measured_end - measured_start) / 1e9 : 0;
  int unanswered = 0;
  for (int i = 0; i < options.connections; i++)
    if (!all[i].answered && all[i].state != DEAD) unanswered++;
  printf(
      "requests_per_second=%.0f p50_us=%.1f p99_us=%.1f requests=%llu errors=%d unanswered=%d "
      "connections=%d load_cpu_percent=%.0f",
      elapsed > 0 ? (double)recorded_requests / elapsed : 0, percentile_ns(&latencies, 0.50) / 1e3,
      percentile_ns(&latencies, 0.99) / 1e3, (unsigned long long)recorded_requests, errors,
      unanswered, options.connections,
      elapsed > 0 ? (double)(own_cpu_end - own_cpu_start) / 1e9 / elapsed * 100 : 0);
  if (server_ticks_start >= 0 && server_ticks_end >= 0 && recorded_requests > 0) {
    double seconds = (double)(server_ticks_end - server_ticks_start) / (double)sysconf(_SC_CLK_TCK);
    printf(" server_cpu_us=%.2f", seconds * 1e6 / (double)recorded_requests);
  }
  printf("\n");
  fflush(stdout);
  for (int i = 0; i < options.connections; i++)
    if (all[i].state != DEAD) close(all[i].fd);
}

int main(int argc, char **argv) {
  parse(argc, argv);
  raise_descriptor_limit();
  if (options.cpu >= 0) pin(0, options.cpu);
  if (options.server_cpu >= 0) pin_server(options.server_pid, options.server_cpu);
  signal(SIGPIPE, SIG_IGN);
  struct sigaction action = {.sa_handler = on_signal};
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);

  memset(&server, 0, sizeof server);
  server.sin_family = AF_INET;
  server.sin_port = htons((uint16_t)options.port);
  if (inet_pton(AF_INET, options.host, &server.sin_addr) != 1) {
    fprintf(stderr, "echoload: %s is not an IPv4 address\n", options.host);
    return 2;
  }
  epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  connection *all = calloc((size_t)options.connections, sizeof *all);
  for (int i = 0; i < options.connections; i++) {
    if (open_connection(&all[i]) != 0) {
      fprintf(stderr, "echoload: could only open %d of %d connections\n", i, options.connections);
      return 1;
    }
  }
  if (options.idle) run_idle(all);
  else run_load(all);
  return 0;
}
