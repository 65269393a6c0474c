/*
 * What handing work to a sleeping thread costs: two threads pass a turn back and forth through a
 * futex, each sleeping (FUTEX_WAIT) until the other wakes it (FUTEX_WAKE), as onnxruntime's
 * intra-op pool does per parallel section when spinning is off. Prints the round trips'
 * percentiles in µs (one round trip = two wake-ups):
 *   wake-latency <round trips> [µs asleep between round trips, default 200]
 */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic int turn = 0; /* 0: main's turn, 1: the other thread's */
static int rounds;

static void wait_for(int value) {
  while (atomic_load(&turn) != value) syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, !value, NULL, NULL, 0);
}
static void hand_to(int value) {
  atomic_store(&turn, value);
  syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
static void *other(void *arg) {
  (void)arg;
  for (int i = 0; i < rounds; i++) { wait_for(1); hand_to(0); }
  return NULL;
}
static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? atoi(argv[1]) : 2000;
  int gap = argc > 2 ? atoi(argv[2]) : 200;
  double *us = malloc(sizeof(double) * rounds);
  pthread_t id;
  pthread_create(&id, NULL, other, NULL);
  for (int i = 0; i < rounds; i++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    hand_to(1);
    wait_for(0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    us[i] = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
    usleep(gap); /* let both threads fall asleep, as between a step's sections */
  }
  pthread_join(id, NULL);
  qsort(us, rounds, sizeof(double), compare);
  printf("round trip µs: p10 %.1f, median %.1f, p90 %.1f (%d round trips)\n", us[rounds / 10], us[rounds / 2], us[rounds * 9 / 10], rounds);
  return 0;
}
