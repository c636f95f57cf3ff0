// How much slower the same work runs right after the thread slept, on this machine: a property of
// the machine, not of Stockroom, which decides how far a latency row measured with idle moments
// (writes 20 ms apart, a client that waits) can be compared with one measured back to back.
//
//   cc -O2 -o /tmp/idle_gap Benchmarks/latency/idle_gap.c && /tmp/idle_gap [ROUNDS]
//
// For each gap (0, 0.1, 0.3, 1, 2, 5 and 20 ms), ROUNDS times (300): sleep for the gap, then time
// two pieces of work: "memory", 200,000 reads 64 bytes apart through a 4 MiB buffer (a working set
// that stays in the caches while the thread runs), and "compute", the same number of steps of
// arithmetic in registers. Prints the median and p90 of each, in microseconds. Where the memory
// work slows after a gap and the compute work does not, the caches were given to other work while
// the core idled (a virtual machine's host, a neighbour), and a request after a gap pays for
// fetching its code and data again.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

enum { STEPS = 200000 };
static const size_t buffer_size = 4u << 20;
static volatile uint64_t sink;

static double memory_work(const volatile unsigned char *buffer) {
    double start = now_us();
    uint64_t sum = 0;
    for (size_t i = 0; i < STEPS; i++) sum += buffer[(i * 64) % buffer_size];
    sink = sum;
    return now_us() - start;
}

static double compute_work(void) {
    double start = now_us();
    uint64_t s = 1;
    for (size_t i = 0; i < STEPS; i++) {
        s = s * 6364136223846793005u + i;
        s ^= s >> 17;
    }
    sink = s;
    return now_us() - start;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    if (rounds < 10) {
        fprintf(stderr, "usage: idle_gap [ROUNDS >= 10]\n");
        return 2;
    }
    volatile unsigned char *buffer = malloc(buffer_size);
    double *memory = malloc(sizeof(double) * rounds), *compute = malloc(sizeof(double) * rounds);
    if (!buffer || !memory || !compute) return 1;
    for (size_t i = 0; i < buffer_size; i++) buffer[i] = (unsigned char)i;
    const int gaps_us[] = {0, 100, 300, 1000, 2000, 5000, 20000};
    printf("gap (ms)  memory p50  p90 (us)  compute p50  p90 (us)\n");
    for (size_t g = 0; g < sizeof gaps_us / sizeof gaps_us[0]; g++) {
        for (int r = 0; r < rounds; r++) {
            if (gaps_us[g]) usleep(gaps_us[g]);
            memory[r] = memory_work(buffer);
            if (gaps_us[g]) usleep(gaps_us[g]);
            compute[r] = compute_work();
        }
        qsort(memory, rounds, sizeof(double), by_value);
        qsort(compute, rounds, sizeof(double), by_value);
        printf("%8.1f  %10.0f  %4.0f       %11.0f  %4.0f\n", gaps_us[g] / 1000.0, memory[rounds / 2],
               memory[rounds * 9 / 10], compute[rounds / 2], compute[rounds * 9 / 10]);
    }
    return 0;
}
