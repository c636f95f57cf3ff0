// The subscriber side of feedbench.py's latency rounds in C (CLIENT=c in run.sh), so that the
// client's own cost per delivery (about 8 us in Python's asyncio) does not sit inside the latency
// it measures. It opens N SSE streams, prints READY once every stream has its `: open`, then reads
// every stream with epoll, stamping each read with CLOCK_MONOTONIC (the clock of Python's
// time.perf_counter_ns), until every stream has seen MARKER or TIMEOUT seconds pass. It prints
// DONE <streams that saw the marker> <its own CPU seconds, user + system>, writes every stamped
// read to OUT and exits (its CPU time is in the line: it may be gone before anyone reads /proc); feedbench.py
// decodes and checks them exactly as it does its own subscribers' reads.
//
//   sse_sink PORT TOKEN N MARKER OUT TIMEOUT_S
//
// OUT holds records of: uint64 ns, uint32 stream index, uint32 length, then the bytes.
#define _GNU_SOURCE  // memmem
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int fd;
    int opened, marked;
    char tail[512];  // the last bytes read, to find `: open` and MARKER across reads
    size_t tail_len;
} stream_t;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char *records;  // every stamped read, in arrival order
static size_t records_len, records_cap;

static void keep(uint64_t ts, uint32_t index, const char *data, uint32_t len) {
    size_t need = records_len + 16 + len;
    if (need > records_cap) {
        records_cap = need * 2;
        records = realloc(records, records_cap);
        if (!records) { perror("realloc"); exit(2); }
    }
    memcpy(records + records_len, &ts, 8);
    memcpy(records + records_len + 8, &index, 4);
    memcpy(records + records_len + 12, &len, 4);
    memcpy(records + records_len + 16, data, len);
    records_len = need;
}

// Appends to the stream's window and says whether `needle` occurs in it.
static int seen(stream_t *s, const char *data, size_t len, const char *needle) {
    char window[sizeof s->tail + 65536];
    size_t keep_len = s->tail_len;
    memcpy(window, s->tail, keep_len);
    size_t take = len > 65536 ? 65536 : len;
    memcpy(window + keep_len, data + len - take, take);
    size_t total = keep_len + take;
    int found = memmem(window, total, needle, strlen(needle)) != NULL;
    size_t tail = total > sizeof s->tail ? sizeof s->tail : total;
    memcpy(s->tail, window + total - tail, tail);
    s->tail_len = tail;
    return found;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: sse_sink PORT TOKEN N MARKER OUT TIMEOUT_S\n");
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[3]);
    const char *token = argv[2], *marker = argv[4], *out = argv[5];
    double timeout_s = atof(argv[6]);
    char request[1024];
    snprintf(request, sizeof request,
             "GET /v1/changes/stream?since=now&topics=items HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
             "Authorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", port, token);
    stream_t *streams = calloc((size_t)n, sizeof *streams);
    int ep = epoll_create1(0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
            fprintf(stderr, "stream %d: connect: %s\n", i, strerror(errno));
            return 1;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (write(fd, request, strlen(request)) != (ssize_t)strlen(request)) {
            fprintf(stderr, "stream %d: write: %s\n", i, strerror(errno));
            return 1;
        }
        streams[i].fd = fd;
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &event);
    }
    int opened = 0, marked = 0, ready = 0;
    uint64_t deadline = 0;
    static char buffer[65536];
    struct epoll_event events[256];
    while (marked < n) {
        if (ready && now_ns() > deadline) break;
        int count = epoll_wait(ep, events, 256, 100);
        if (count < 0 && errno != EINTR) { perror("epoll_wait"); return 1; }
        for (int e = 0; e < count; e++) {
            uint32_t i = events[e].data.u32;
            stream_t *s = &streams[i];
            ssize_t got = read(s->fd, buffer, sizeof buffer);
            uint64_t ts = now_ns();
            if (got <= 0) {
                fprintf(stderr, "stream %u: closed by the server (%s)\n", i, got == 0 ? "EOF" : strerror(errno));
                epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
                if (!s->marked) { s->marked = 1; marked++; }
                continue;
            }
            keep(ts, i, buffer, (uint32_t)got);
            if (!s->opened && seen(s, buffer, (size_t)got, ": open\n\n")) {
                s->opened = 1;
                if (++opened == n) {
                    printf("READY\n");
                    fflush(stdout);
                    ready = 1;
                    deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
                }
            } else if (s->opened && !s->marked && seen(s, buffer, (size_t)got, marker)) {
                s->marked = 1;
                marked++;
            }
        }
    }
    FILE *file = fopen(out, "wb");
    if (!file || fwrite(records, 1, records_len, file) != records_len || fclose(file) != 0) {
        perror(out);
        return 1;
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu = (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    printf("DONE %d %.6f\n", marked, cpu);
    fflush(stdout);
    return 0;
}
