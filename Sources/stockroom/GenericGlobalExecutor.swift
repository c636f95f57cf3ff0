import CConcurrencyHook
import NIOCore
import NIOPosix
import Synchronization

/// Makes NIO's singleton event loops Swift's global executor, running each job as the generic
/// executor would. NIO's own `unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`
/// runs every job isolated to its event loop as a serial executor; a nonisolated async function
/// then always sees an executor it must leave, so every `hop_to_executor` of a request's code
/// goes back through the event loop's queue (a task switch each).
/// Run as generic, those hops cost nothing: the job stays where it is.
///
/// A job enqueued from one of the loops runs on that loop. A job enqueued from any other thread
/// (a continuation resumed by the database's writer queue: a write's answer, a feed wake-up) goes
/// back to the loop its task last ran on (`LoopAffinity`), which is where its connection's channel
/// is: a loop picked round robin would be the other one half the time, and the task's socket
/// write would then have to hop to the channel's loop.
///
/// Same technique as NIO's (the runtime's `swift_task_enqueueGlobal_hook`), with the same
/// caveats: process-wide, and it must run before any task is enqueued on the global executor. The
/// hook is reached by address (`CConcurrencyHook`), not by `dlsym` as NIO does, so that it is set in
/// a binary with the runtime linked statically too (the Docker image's), which exports no symbol.
enum GenericGlobalExecutor {
    private typealias EnqueueHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs the hook; false when another is set already.
    static func install() -> Bool {
        let slot = UnsafeMutableRawPointer(stockroom_task_enqueue_global_hook()).assumingMemoryBound(to: UnsafeRawPointer?.self)
        guard slot.pointee == nil else { return false }
        LoopAffinity.shared = LoopAffinity(group: MultiThreadedEventLoopGroup.singleton)
        return withUnsafeTemporaryAllocation(of: EnqueueHook.self, capacity: 1) { hook in
            hook.baseAddress!.initialize(to: { job, _ in LoopAffinity.shared!.enqueue(job) })
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

/// Where each job runs: on the calling thread's loop when it is one of the group's, else on the
/// loop the job's task last ran on, else on the group's next loop.
///
/// "Last ran on" is a direct-mapped table of 4,096 words, each a task's address with its loop's
/// index in the low four bits (tasks are 16-byte aligned), written before every job runs. A slot
/// another task took over, or a job that is not a task, only costs the choice of loop: every loop
/// runs every job correctly, so a stale or missing entry is never wrong, at worst a hop.
// @unchecked: `slots` is written once in init and then only through its atomics.
final class LoopAffinity: @unchecked Sendable {
    nonisolated(unsafe) static var shared: LoopAffinity?

    private static let slotBits = 12
    private let loops: [any EventLoop]
    private let group: MultiThreadedEventLoopGroup
    private let slots: UnsafeMutablePointer<Atomic<UInt>>

    init(group: MultiThreadedEventLoopGroup) {
        self.group = group
        let loops = Array(group.makeIterator())
        // Four bits hold the index; a larger group goes round robin from other threads.
        self.loops = loops.count < 16 ? loops : []
        slots = .allocate(capacity: 1 << Self.slotBits)
        for index in 0..<(1 << Self.slotBits) { (slots + index).initialize(to: Atomic(0)) }
    }

    func enqueue(_ job: UnownedJob) {
        let address = UInt(bitPattern: unsafeBitCast(job, to: UnsafeRawPointer.self))
        let index = loopIndex(for: address)
        guard index >= 0 else {
            group.any().execute { runAsGeneric(job) }
            return
        }
        loops[index].execute { [self] in
            // Recorded before the job runs: once it has run, its task may be gone.
            if address & 0xF == 0 { (slots + Self.slot(of: address)).pointee.store(address | UInt(index), ordering: .relaxed) }
            runAsGeneric(job)
        }
    }

    /// The calling thread's loop, else the task's last, else the next; -1 when the group is too large.
    private func loopIndex(for address: UInt) -> Int {
        if let current = MultiThreadedEventLoopGroup.currentEventLoop, let index = loops.firstIndex(where: { $0 === current }) {
            return index
        }
        let word = (slots + Self.slot(of: address)).pointee.load(ordering: .relaxed)
        if address & 0xF == 0, word & ~0xF == address, Int(word & 0xF) < loops.count {
            return Int(word & 0xF)
        }
        let next = group.next()
        return loops.firstIndex(where: { $0 === next }) ?? -1
    }

    private static func slot(of address: UInt) -> Int {
        Int(truncatingIfNeeded: (UInt64(address) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - slotBits))
    }
}
