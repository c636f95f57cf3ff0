// What one durable commit's flush costs on this machine's file system: the floor under a lone write
// at synchronous=FULL, which no server code can go below. A property of the machine, not of Stockroom.
//
//   cc -O2 -o /tmp/flush Benchmarks/latency/flush.c && /tmp/flush [DIR] [ROUNDS]
//
// In a file in DIR (the working directory by default), ROUNDS times (1,000) each, timed from the
// first write to the end of `fdatasync`:
//   "append":    8 KiB written past the end of the file (the file grows, so the flush also commits
//                the file's new size to the file system's journal);
//   "overwrite": 8 KiB written over blocks the file already has;
//   "wal frames": what a PUT's commit writes to SQLite's WAL once the WAL has its working size: two
//                frames (a 24-byte header and a 4 KiB page each) written over the file's own blocks.
// Prints the median, p90 and p99 of each, in microseconds.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

static void report(const char *name, double *times, int rounds) {
    qsort(times, rounds, sizeof times[0], by_value);
    printf("%-11s p50 %6.0f  p90 %6.0f  p99 %6.0f us\n", name, times[rounds / 2], times[rounds * 9 / 10],
           times[rounds * 99 / 100]);
}

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

// Writes 8 KiB blocks 0 to rounds - 1 of the file, each followed by `fdatasync`, timing each.
static void blocks(int fd, const char *block, double *times, int rounds) {
    for (int i = 0; i < rounds; i++) {
        double start = now_us();
        must(pwrite(fd, block, 8192, (off_t)i * 8192) == 8192, "pwrite");
        must(fdatasync(fd) == 0, "fdatasync");
        times[i] = now_us() - start;
    }
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    int rounds = argc > 2 ? atoi(argv[2]) : 1000;
    if (rounds < 10) rounds = 10;
    char path[4096];
    snprintf(path, sizeof path, "%s/flush-probe.XXXXXX", dir);
    int fd = mkstemp(path);
    must(fd >= 0, "mkstemp");
    unlink(path);
    static char block[8192];
    memset(block, 0x5a, sizeof block);
    double *times = malloc(sizeof(double) * rounds);
    must(times != NULL, "malloc");

    blocks(fd, block, times, rounds);
    report("append", times, rounds);
    // The file now has every block the next two passes write.
    must(fsync(fd) == 0, "fsync");
    blocks(fd, block, times, rounds);
    report("overwrite", times, rounds);

    const off_t frame = 24 + 4096;
    for (int i = 0; i < rounds; i++) {
        off_t at = 32 + (off_t)(i % ((rounds * 8192 - 32) / (2 * frame))) * 2 * frame;
        double start = now_us();
        for (int k = 0; k < 2; k++) {
            must(pwrite(fd, block, 24, at + k * frame) == 24, "pwrite");
            must(pwrite(fd, block, 4096, at + k * frame + 24) == 4096, "pwrite");
        }
        must(fdatasync(fd) == 0, "fdatasync");
        times[i] = now_us() - start;
    }
    report("wal frames", times, rounds);
    close(fd);
    return 0;
}
