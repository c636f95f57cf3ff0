// What the one-file probes in this folder share: a monotonic clock in microseconds and the
// comparison that sorts their timings. Included by path ("timing.h"), so each probe still builds
// with one `cc` line.
#ifndef STOCKROOM_LATENCY_TIMING_H
#define STOCKROOM_LATENCY_TIMING_H

#include <time.h>

static inline double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

// For qsort over doubles, ascending.
static inline int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
