import ArgumentParser
import Logging
import NIOCore
import NIOPosix
import StockroomServer

/// The process entry point: makes NIO's event loops Swift's global executor, then runs the command.
@main
enum Entry {
    /// Which global executor runs the process's jobs (as set by `main`); `serve` logs it at startup.
    nonisolated(unsafe) static var globalExecutor = "Swift's default pool"

    static func main() async {
        // Request handlers, GRDB continuations and NIO's I/O then share the same threads, so a request
        // does not cross from an event loop to the concurrency pool and back (one wake-up each way).
        // Must happen before any task runs on the global executor: hence first, here. Jobs run as the
        // generic executor would (see `GenericGlobalExecutor`); NIO's own installer, which runs them
        // isolated to the event loop, is tried should the hook be taken already.
        if GenericGlobalExecutor.install() {
            globalExecutor = "event loops, as the generic executor"
        } else if NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() {
            globalExecutor = "event loops, isolated to each loop (NIO)"
        }
        // Every log line goes through one handler that escapes control characters in stored values,
        // to standard output (written by a thread of its own while `serve` runs: `LogOutput`).
        LoggingSystem.bootstrap { label in
            TerminalSafeLogHandler(wrapping: LineLogHandler(label: label, output: LogOutput.standardOutput))
        }
        await App.main()
    }
}

/// The `stockroom` command: serve, migrate and manage tokens.
struct App: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stockroom",
        abstract: "Inventory and per-device navigation state over HTTP, stored in SQLite.",
        subcommands: [Serve.self, Migrate.self, Token.self, Backup.self, Restore.self],
        defaultSubcommand: Serve.self
    )
}
