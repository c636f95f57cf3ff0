import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Makes NIO's singleton event loops Swift's global executor, running each job as the generic
/// executor would. NIO's own `unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`
/// runs every job isolated to its event loop as a serial executor; a nonisolated async function
/// then always sees an executor it must leave, so every `hop_to_executor` of a request's code
/// went back through the event loop's queue (perf: 10% of a GET's CPU under `swift_task_switch`).
/// Run as generic, those hops cost nothing: the job stays where it is.
///
/// Same technique as NIO's (the runtime's `swift_task_enqueueGlobal_hook`), with the same
/// caveats: process-wide, and it must run before any task is enqueued on the global executor.
enum GenericGlobalExecutor {
    private typealias EnqueueHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs the hook; false when the runtime has no hook to set, or another is set already.
    static func install() -> Bool {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "swift_task_enqueueGlobal_hook") else { return false }
        let slot = symbol.assumingMemoryBound(to: UnsafeRawPointer?.self)
        guard slot.pointee == nil else { return false }
        return withUnsafeTemporaryAllocation(of: EnqueueHook.self, capacity: 1) { hook in
            hook.baseAddress!.initialize(to: { job, _ in
                // `any()` is the calling thread's own loop when it is one of the group's: no thread switch.
                MultiThreadedEventLoopGroup.singleton.any().execute { runAsGeneric(job) }
            })
            hook.baseAddress!.withMemoryRebound(to: UnsafeRawPointer.self, capacity: 1) { slot.pointee = $0.pointee }
            return true
        }
    }
}

/// The runtime's entry for running a job on an executor (the standard library declares it so too).
@_silgen_name("swift_job_run")
private func swiftJobRun(_ job: UnownedJob, _ executor: UnownedSerialExecutor)

/// The generic executor's reference: both words zero (`SerialExecutorRef::generic()` in the runtime).
private let genericExecutor = unsafeBitCast((Int(0), Int(0)), to: UnownedSerialExecutor.self)

private func runAsGeneric(_ job: UnownedJob) {
    swiftJobRun(job, genericExecutor)
}
