// callgrind's client requests as functions Swift can call. Outside valgrind each is a few
// instructions that do nothing; without valgrind's headers they do nothing at all.
#ifndef CCALLGRIND_H
#define CCALLGRIND_H

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define CCALLGRIND_AVAILABLE 1
#else
#define CCALLGRIND_AVAILABLE 0
#endif

/// Whether the process runs under valgrind (0 when it does not, or valgrind's headers were missing).
static inline int ccallgrind_running(void) {
#if CCALLGRIND_AVAILABLE
    return (int)RUNNING_ON_VALGRIND;
#else
    return 0;
#endif
}

/// Writes callgrind's counters since the last dump (every thread's) to a new file, labelled `reason`, and resets them.
static inline void ccallgrind_dump(const char *reason) {
#if CCALLGRIND_AVAILABLE
    CALLGRIND_DUMP_STATS_AT(reason);
#endif
}

#endif
