// What handing work to a sleeping thread and getting the answer back costs on this machine: the
// price of each hop a lone write makes (an event loop to the writer's thread and back). A property
// of the machine, not of Stockroom.
//
//   cc -O2 -pthread -o /tmp/wakeup Benchmarks/latency/wakeup.c && /tmp/wakeup [GAP_US] [ROUNDS]
//
// Two threads and two eventfds: ROUNDS times (2,000), the first thread sleeps GAP_US (1,000) so
// that both threads are idle, as between two lone writes, then writes to the second thread's
// eventfd and blocks reading its own until the second thread, woken by its read, writes back.
// Prints the median, p90 and p99 of that round trip (two wake-ups), in microseconds.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static int to_second, to_first;

static void *second(void *unused) {
    (void)unused;
    uint64_t value;
    while (read(to_second, &value, sizeof value) == sizeof value) {
        if (write(to_first, &value, sizeof value) != sizeof value) break;
    }
    return NULL;
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int gap = argc > 1 ? atoi(argv[1]) : 1000;
    int rounds = argc > 2 ? atoi(argv[2]) : 2000;
    to_second = eventfd(0, 0);
    to_first = eventfd(0, 0);
    if (to_second < 0 || to_first < 0 || rounds < 1) return 2;
    pthread_t thread;
    if (pthread_create(&thread, NULL, second, NULL) != 0) return 2;
    double *took = malloc(rounds * sizeof *took);
    if (took == NULL) return 2;
    for (int i = 0; i < rounds; i++) {
        usleep(gap);
        uint64_t value = 1;
        double start = now_us();
        if (write(to_second, &value, sizeof value) != sizeof value) return 1;
        if (read(to_first, &value, sizeof value) != sizeof value) return 1;
        took[i] = now_us() - start;
    }
    qsort(took, rounds, sizeof *took, by_value);
    printf("after %d us idle: round trip p50 %.1f p90 %.1f p99 %.1f us (%d rounds)\n", gap, took[rounds / 2],
        took[rounds * 9 / 10], took[rounds * 99 / 100], rounds);
    return 0;
}
