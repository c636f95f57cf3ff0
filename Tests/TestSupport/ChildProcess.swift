#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSpawn
import Foundation
import Synchronization

/// A child process started with `posix_spawn`, for the tests that run programs (the real binary,
/// PostgreSQL's `initdb` and `pg_ctl`).
///
/// Not Foundation's `Process`: on Linux with Swift 6.3.1 its `run()` crashes now and then (a
/// 256-byte over-read of a `dirent` in `findMaximumOpenFromProcSelfFD`, fixed upstream by
/// swift-corelibs-foundation#5472 but not in this toolchain), which took down the whole test
/// process in about one full run in ten.
public final class ChildProcess: Sendable {
    public let processIdentifier: pid_t
    /// The wait status once reaped; nil while the child runs.
    private let reaped = Mutex<Int32?>(nil)

    public enum SpawnError: Error { case failed(String, Int32) }

    /// Starts `executable` with `arguments` in `directory`. The child's standard output and error
    /// go to the given descriptors (which stay owned by the caller), or to /dev/null when nil.
    public init(
        executable: String, arguments: [String], directory: String, environment: [String: String],
        standardOutput: Int32? = nil, standardError: Int32? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let standardOutput {
            posix_spawn_file_actions_adddup2(&actions, standardOutput, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        if let standardError {
            posix_spawn_file_actions_adddup2(&actions, standardError, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        cspawn_addchdir(&actions, directory)
        // Nothing of this process's beyond the three standard descriptors (its sockets and files
        // would count against the child's open-file limit).
        cspawn_addclosefrom(&actions, 3)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else { throw SpawnError.failed(executable, result) }
        processIdentifier = pid
    }

    /// Reaps the child if it has exited, without blocking.
    public var isRunning: Bool {
        reaped.withLock { status in
            if status != nil { return false }
            var waitStatus: Int32 = 0
            let result = waitpid(processIdentifier, &waitStatus, WNOHANG)
            if result == processIdentifier {
                status = waitStatus
                return false
            }
            return result == 0
        }
    }

    /// Waits for the child to exit without holding a thread: it polls. `waitUntilExit()` on a task
    /// holds one of the few cooperative threads (as many as cores) for as long as the child runs,
    /// and every other test's tasks wait meanwhile.
    public func exited(polling interval: Duration = .milliseconds(5)) async {
        while isRunning {
            do {
                try await Task.sleep(for: interval)
            } catch {
                waitUntilExit()
                return
            }
        }
    }

    /// Blocks until the child exits.
    public func waitUntilExit() {
        reaped.withLock { status in
            guard status == nil else { return }
            var waitStatus: Int32 = 0
            while waitpid(processIdentifier, &waitStatus, 0) == -1 && errno == EINTR {}
            status = waitStatus
        }
    }

    /// The exit status, or the signal's number when a signal ended the child (as `Process` says).
    public var terminationStatus: Int32 {
        let status = reaped.withLock { $0 } ?? 0
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return status & 0x7f
    }

    /// A pipe whose read end the test keeps; both ends close on exec in other children.
    public static func pipe() -> (read: FileHandle, write: Int32) {
        var fds: [Int32] = [0, 0]
        _ = cspawn_pipe_cloexec(&fds)
        return (FileHandle(fileDescriptor: fds[0], closeOnDealloc: true), fds[1])
    }
}
