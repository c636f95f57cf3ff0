import ArgumentParser
import Foundation
import Logging
import NIOCore
import NIOPosix
import StockroomServer

/// The process entry point: makes NIO's event loops Swift's global executor (unless told not
/// to), then runs the command.
@main
enum Entry {
    /// Which global executor runs the process's jobs (as set by `main`); `serve` logs it at startup.
    nonisolated(unsafe) static var globalExecutor = "Swift's default pool"

    static func main() async {
        // Request handlers, GRDB continuations and NIO's I/O then share the same threads, so a request
        // does not cross from an event loop to the concurrency pool and back (one wake-up each way).
        // Must happen before any task runs on the global executor: hence first, here, and the choice
        // is read from the command line and the environment only (the config file is read by a task).
        // Jobs run as the generic executor would (see `GenericGlobalExecutor`); NIO's own installer,
        // which runs them isolated to the event loop, is tried should the hook be taken already.
        switch GlobalExecutorChoice.read(arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment) {
        case .success(.eventLoops):
            if GenericGlobalExecutor.install() {
                globalExecutor = "event loops, as the generic executor"
            } else if NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() {
                globalExecutor = "event loops, isolated to each loop (NIO)"
            }
        case .success(.swiftDefault):
            break
        case .failure(let problem):
            FileHandle.standardError.write(Data("stockroom: \(problem.description)\n".utf8))
            exit(64)
        }
        // Every log line goes through one handler that escapes control characters in stored values,
        // to standard output (written by a thread of its own while `serve` runs: `LogOutput`).
        LoggingSystem.bootstrap { label in
            TerminalSafeLogHandler(wrapping: LineLogHandler(label: label, output: LogOutput.standardOutput))
        }
        await App.main()
    }
}

/// Which global executor the process runs its tasks on: `--global-executor`, else `GLOBAL_EXECUTOR`,
/// else NIO's event loops.
enum GlobalExecutorChoice: String, CaseIterable, Sendable {
    /// NIO's event loops, running jobs as the generic executor (`GenericGlobalExecutor`).
    case eventLoops = "eventloops"
    /// Swift's default pool: the runtime's own executor, nothing installed.
    case swiftDefault = "default"

    struct Invalid: Error, CustomStringConvertible {
        let source: String
        let value: String
        var description: String {
            "invalid setting global executor (\(source)): \"\(value)\"; expected one of "
                + GlobalExecutorChoice.allCases.map(\.rawValue).joined(separator: ", ")
        }
    }

    static func read(arguments: [String], environment: [String: String]) -> Result<GlobalExecutorChoice, Invalid> {
        var flag: String?
        var index = arguments.index(after: arguments.startIndex)
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "--" { break }
            if argument == "--global-executor", arguments.index(after: index) < arguments.endIndex {
                flag = arguments[arguments.index(after: index)]
            } else if argument.hasPrefix("--global-executor=") {
                flag = String(argument.dropFirst("--global-executor=".count))
            }
            index = arguments.index(after: index)
        }
        let (source, value): (String, String)
        if let flag {
            (source, value) = ("flag --global-executor", flag)
        } else if let variable = environment["GLOBAL_EXECUTOR"] {
            (source, value) = ("environment variable GLOBAL_EXECUTOR", variable)
        } else {
            return .success(.eventLoops)
        }
        guard let choice = GlobalExecutorChoice(rawValue: value.lowercased()) else {
            return .failure(Invalid(source: source, value: value))
        }
        return .success(choice)
    }
}

/// The `stockroom` command: serve, migrate and manage tokens.
struct App: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stockroom",
        abstract: "Inventory and per-device navigation state over HTTP, stored in SQLite.",
        subcommands: [Serve.self, Migrate.self, Token.self, Backup.self, Restore.self, Items.self],
        defaultSubcommand: Serve.self
    )
}
