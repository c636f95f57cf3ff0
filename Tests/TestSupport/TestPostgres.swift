import Foundation
import Synchronization

/// A throwaway PostgreSQL 15 server for tests: a fresh cluster in a temporary folder, on a free
/// loopback port, trusted local connections, started with Debian's `initdb` and `pg_ctl` and
/// stopped by its postmaster's PID. PostgreSQL refuses to run as root, so as root (CI) every
/// command runs as the `postgres` user (`runuser`), which owns the folder.
public final class TestPostgres: Sendable {
    /// The deadline (and so the lock timeout) of a store a test opens on this server: no test but
    /// the deadline's own is about it, and on a full test run's busy two cores a call can wait for a
    /// connection, or a racing write for its lock, past the default five seconds.
    public static let storeDeadline: Duration = .seconds(30)

    /// Debian's PostgreSQL 15 programs.
    public static let binaries = "/usr/lib/postgresql/15/bin"

    public let port: Int
    public let folder: URL
    /// The postmaster's process id (the first line of `postmaster.pid`); a new one after `restart`.
    public var pid: Int32 { postmaster.withLock { $0 } }
    private let postmaster: Mutex<Int32>
    private let options: String
    public let user = "postgres"
    private let stopped = Mutex(false)

    /// `postgres://postgres@127.0.0.1:PORT/DATABASE`.
    public func url(database: String = "postgres") -> String {
        "postgres://\(user)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private static var asRoot: Bool { getuid() == 0 }

    /// Whether the PostgreSQL tests run: when PostgreSQL 15 is installed, or when
    /// `STOCKROOM_REQUIRE_POSTGRES=1` (CI sets it, so that a missing server fails the run instead
    /// of skipping those tests). Without either they are skipped, so that `swift test` needs only
    /// the Swift toolchain and SQLite.
    public static var isAvailable: Bool {
        ProcessInfo.processInfo.environment["STOCKROOM_REQUIRE_POSTGRES"] == "1"
            || FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb")
    }

    /// Starts a new cluster; `settings` go to the server as `-c name=value`.
    public static func start(settings: [String: String] = [:]) async throws -> TestPostgres {
        guard FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb") else {
            throw Failure(description: "PostgreSQL 15 is not installed (\(binaries)/initdb); apt-get install postgresql-15")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        do {
            if asRoot { try await run("/bin/chown", ["postgres:postgres", folder.path]) }
            try await run("/bin/chmod", ["700", folder.path])
            let data = folder.appendingPathComponent("data").path
            try await runAsPostgres(
                "\(binaries)/initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"])
            var options = "-c listen_addresses=127.0.0.1 -k \(folder.path)"
            for (name, value) in settings.sorted(by: { $0.key < $1.key }) { options += " -c \(name)=\(value)" }
            // A free port can be taken between the probe and the bind: try a few.
            var lastError: (any Error)?
            for _ in 0..<5 {
                let port = try freePort()
                do {
                    try await runAsPostgres(
                        "\(binaries)/pg_ctl",
                        ["-D", data, "-l", folder.appendingPathComponent("server.log").path, "-w", "-t", "30", "-o", "-p \(port) \(options)", "start"])
                    let pidText = try String(contentsOfFile: "\(data)/postmaster.pid", encoding: .utf8)
                    guard let pid = pidText.split(separator: "\n").first.flatMap({ Int32($0) }) else {
                        throw Failure(description: "no pid in postmaster.pid")
                    }
                    return TestPostgres(port: port, folder: folder, pid: pid, options: options)
                } catch {
                    lastError = error
                }
            }
            throw lastError ?? Failure(description: "PostgreSQL did not start")
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    private init(port: Int, folder: URL, pid: Int32, options: String) {
        self.port = port
        self.folder = folder
        self.postmaster = Mutex(pid)
        self.options = options
    }

    /// Stops the server (fast shutdown: every connection is cut), keeping its data.
    public func pause() async throws {
        try await Self.runAsPostgres("\(Self.binaries)/pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "fast", "-w", "stop"])
    }

    /// Starts the paused server again, on the same port.
    public func resume() async throws {
        let data = folder.appendingPathComponent("data").path
        try await Self.runAsPostgres(
            "\(Self.binaries)/pg_ctl",
            ["-D", data, "-l", folder.appendingPathComponent("server.log").path, "-w", "-t", "30", "-o", "-p \(port) \(options)", "start"])
        let pidText = try String(contentsOfFile: "\(data)/postmaster.pid", encoding: .utf8)
        guard let pid = pidText.split(separator: "\n").first.flatMap({ Int32($0) }) else { throw Failure(description: "no pid in postmaster.pid") }
        postmaster.withLock { $0 = pid }
    }

    /// The test process's server, started on first use and stopped when the process exits; every
    /// test makes its own database on it (`newDatabase`). Room for 1,000 connections: every store a
    /// test opens may grow its pool to 20 (a multi-daemon test's three to 63), and on a busy
    /// two-core machine more tests overlap than on a quiet one (400 ran out once, under a full run
    /// with other builds beside it).
    public static func shared() async throws -> TestPostgres {
        let starting = sharedStart.withLock { task in
            if let task { return task }
            let started = Task {
                let server = try await TestPostgres.start(settings: ["max_connections": "1000", "fsync": "off"])
                sharedServer.withLock { $0 = server }
                return server
            }
            task = started
            atexit { TestPostgres.sharedServer.withLock { $0 }?.stop() }
            return started
        }
        return try await starting.value
    }

    /// The first caller's start, which every later caller awaits.
    private static let sharedStart = Mutex<Task<TestPostgres, any Error>?>(nil)
    /// The server once started, for the exit handler to stop.
    private static let sharedServer = Mutex<TestPostgres?>(nil)

    /// Creates a new, empty database and returns its URL.
    public func newDatabase() async throws -> String {
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await createDatabase(name)
        return url(database: name)
    }

    /// Creates a database.
    public func createDatabase(_ name: String) async throws {
        try await Self.runAsPostgres("\(Self.binaries)/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", user, name])
    }

    /// Stops the server (fast shutdown: SIGINT to the postmaster), waits for it, and removes the folder.
    public func stop() {
        guard stopped.withLock({ stopped in defer { stopped = true }; return !stopped }) else { return }
        kill(pid, SIGINT)
        let deadline = Date().addingTimeInterval(30)
        while kill(pid, 0) == 0, Date() < deadline { usleep(20_000) }
        if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(at: folder)
    }

    /// Whether the postmaster is still running.
    public var isRunning: Bool { kill(pid, 0) == 0 }

    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func runAsPostgres(_ executable: String, _ arguments: [String]) async throws {
        if asRoot {
            try await run("/usr/sbin/runuser", ["-u", "postgres", "--", executable] + arguments)
        } else {
            try await run(executable, arguments)
        }
    }

    /// Runs a program to its end, its output to a file that the error quotes. `posix_spawn` with
    /// every other descriptor closed, not Foundation's `Process`: `pg_ctl start` leaves the
    /// postmaster running with what it inherited, and `Process.waitUntilExit` then waits for it.
    /// Waited for by polling (`ChildProcess.exited`): `initdb` and `pg_ctl` take seconds on a busy
    /// machine, and a blocked cooperative thread would stall every other test's tasks meanwhile.
    private static func run(_ executable: String, _ arguments: [String]) async throws {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-pg-out-\(UUID().uuidString)").path
        let output = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw Failure(description: "open \(outputPath): \(errno)") }
        defer {
            close(output)
            unlink(outputPath)
        }
        let process = try ChildProcess(
            executable: executable, arguments: arguments, directory: "/",
            environment: ProcessInfo.processInfo.environment, standardOutput: output, standardError: output)
        await process.exited()
        guard process.terminationStatus == 0 else {
            let text = FileManager.default.contents(atPath: outputPath) ?? Data()
            throw Failure(
                description: "\(executable) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): "
                    + String(decoding: text.prefix(2000), as: UTF8.self))
        }
    }
}
