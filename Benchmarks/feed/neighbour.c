// Memory traffic beside a catch-up, for catchup.sh's NEIGHBOUR=1: random read-modify-writes over
// MB megabytes (default 256, about what the store's items and their table of places take for a
// million items) until killed. It reads nothing from the server; a raw socket read beside it
// shows how much a catch-up's rate moves with what else runs on the machine.
//
//   cc -O2 -o neighbour Benchmarks/feed/neighbour.c && ./neighbour [MB]
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    size_t megabytes = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
    size_t words = megabytes * 1024 * 1024 / sizeof(uint64_t);
    uint64_t *table = calloc(words, sizeof(uint64_t));
    if (!table || words == 0) {
        fprintf(stderr, "neighbour: cannot take %zu MB\n", megabytes);
        return 2;
    }
    uint64_t x = 88172645463325252ull, sum = 0;
    for (;;) {
        for (int i = 0; i < 1000000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            table[x % words] += (uint64_t)i;
            sum += table[(x >> 20) % words];
        }
        // Keeps the loop's reads from being optimized away.
        if (sum == 42) putchar('.');
    }
}
