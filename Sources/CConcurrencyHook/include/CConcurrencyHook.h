// The Swift runtime's hook for enqueueing a job on the global executor, reached by a direct
// reference rather than by name: in a binary with the runtime linked statically the variable is not
// exported, so dlsym cannot find it, but the linker still resolves a reference to it.

/// The address of `swift_task_enqueueGlobal_hook` (a function pointer, NULL while unset).
void *_Nullable *_Nonnull stockroom_task_enqueue_global_hook(void);
