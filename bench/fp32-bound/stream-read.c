/*
 * A streaming read of a buffer larger than the last-level cache, by 1..T threads, each
 * summing its own contiguous part (the way a one-row MatMul streams its weight matrix).
 * Prints one line per repeat: threads, bytes, seconds, GB/s (1e9 bytes per second), and the
 * readers' CPU seconds (their thread CPU clocks: what preemption on a loaded machine does not
 * inflate).
 *   stream-read <MiB> <threads> <repeats>
 * Compiled by bench/fp32-bound.ts with cc -O3 -march=native (integer sums vectorize
 * without -ffast-math).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct part { const uint64_t *from; size_t words; uint64_t sum; double cpu; pthread_barrier_t *start; };

static double clock_seconds(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double now(void) { return clock_seconds(CLOCK_MONOTONIC); }

static uint64_t sum_words(const uint64_t *p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) { a += p[i]; b += p[i + 1]; c += p[i + 2]; d += p[i + 3]; }
  for (; i < n; i++) a += p[i];
  return a + b + c + d;
}

static void *reader(void *arg) {
  struct part *part = arg;
  pthread_barrier_wait(part->start);
  double cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
  part->sum = sum_words(part->from, part->words);
  part->cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
  pthread_barrier_wait(part->start);
  return NULL;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
  int threads = argc > 2 ? atoi(argv[2]) : 1;
  int repeats = argc > 3 ? atoi(argv[3]) : 10;
  size_t bytes = mib << 20, words = bytes / 8;
  uint64_t *buffer = aligned_alloc(64, bytes);
  if (!buffer || threads < 1) return 1;
  for (size_t i = 0; i < words; i++) buffer[i] = i * 2654435761u;
  uint64_t checksum = 0;
  for (int r = 0; r < repeats; r++) {
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, threads + 1);
    struct part parts[64];
    pthread_t ids[64];
    size_t each = words / threads;
    for (int t = 0; t < threads; t++) {
      parts[t] = (struct part){ buffer + t * each, t == threads - 1 ? words - t * each : each, 0, 0, &start };
      pthread_create(&ids[t], NULL, reader, &parts[t]);
    }
    pthread_barrier_wait(&start);
    double began = now();
    pthread_barrier_wait(&start);
    double seconds = now() - began;
    double cpu = 0;
    for (int t = 0; t < threads; t++) { pthread_join(ids[t], NULL); checksum += parts[t].sum; cpu += parts[t].cpu; }
    pthread_barrier_destroy(&start);
    printf("%d %zu %.6f %.2f %.6f\n", threads, bytes, seconds, bytes / seconds / 1e9, cpu);
  }
  fprintf(stderr, "checksum %llu\n", (unsigned long long)checksum);
  free(buffer);
  return 0;
}
