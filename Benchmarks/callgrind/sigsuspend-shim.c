// Preloaded into the server under valgrind 3.19, which would otherwise crash (SIGSEGV inside
// valgrind) when the main thread parks in libdispatch's dispatch_main: _dispatch_sigsuspend passes
// a `static const sigset_t` (read-only memory) to sigsuspend, and valgrind's syscall wrapper writes
// into the caller's mask to unblock its own signal. This sigsuspend hands the kernel a writable
// copy instead; nothing else changes (the main thread only ever waits there).
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, (size_t)(_NSIG / 8));
}
