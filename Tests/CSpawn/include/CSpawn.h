// glibc's non-portable posix_spawn file actions, which Swift's Glibc module does not declare
// (they need _GNU_SOURCE). Used by the tests that run the real binary.
#include <spawn.h>

int cspawn_addchdir(posix_spawn_file_actions_t *actions, const char *path);
int cspawn_addclosefrom(posix_spawn_file_actions_t *actions, int from);
int cspawn_pipe_cloexec(int fds[2]);
