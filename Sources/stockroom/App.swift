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
        // Must happen before any task runs on the global executor, and the number of loops before
        // NIO's group starts: hence first, here, and both are read from the command line and the
        // environment only (the config file is read by a task).
        // Jobs run as the generic executor would (see `GenericGlobalExecutor`); NIO's own installer,
        // which runs them isolated to the event loop, is tried should the hook be taken already.
        let arguments = CommandLine.arguments
        let environment = ProcessInfo.processInfo.environment
        let choice: GlobalExecutorChoice
        do throws(EarlySetting.Invalid) {
            choice = try GlobalExecutorChoice.read(arguments: arguments, environment: environment)
            if let loops = try EventLoopCount.read(arguments: arguments, environment: environment) {
                NIOSingletons.groupLoopCountSuggestion = loops
            }
        } catch {
            FileHandle.standardError.write(Data("stockroom: \(error.description)\n".utf8))
            exit(64)
        }
        if choice == .eventLoops {
            if GenericGlobalExecutor.install() {
                globalExecutor = "event loops, as the generic executor"
            } else if NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() {
                globalExecutor = "event loops, isolated to each loop (NIO)"
            }
        }
        // Every log line goes through one handler that escapes control characters in stored values,
        // to standard output (written by a thread of its own while `serve` runs: `LogOutput`).
        LoggingSystem.bootstrap { label in
            TerminalSafeLogHandler(wrapping: LineLogHandler(label: label, output: LogOutput.standardOutput))
        }
        await App.main()
    }

    /// The event loops of NIO's group, which serve the connections (and, by default, run the tasks).
    static var eventLoopCount: Int {
        Array(MultiThreadedEventLoopGroup.singleton.makeIterator()).count
    }
}

/// A setting of the process read before anything runs (so not from the config file): its flag,
/// wherever it is on the command line, else its environment variable.
struct EarlySetting: Sendable {
    /// As error messages name it ("global executor").
    let name: String
    let flag: String
    let variable: String

    /// A value refused, with where it came from and what was expected.
    struct Invalid: Error, CustomStringConvertible {
        let setting: String
        let source: String
        let value: String
        let expected: String
        var description: String { "invalid setting \(setting) (\(source)): \"\(value)\"; expected \(expected)" }
    }

    /// The value given and where it came from; nil when neither the flag nor the variable is set.
    func read(arguments: [String], environment: [String: String]) -> (source: String, value: String)? {
        var value: String?
        var index = arguments.index(after: arguments.startIndex)
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "--" { break }
            if argument == flag, arguments.index(after: index) < arguments.endIndex {
                value = arguments[arguments.index(after: index)]
            } else if argument.hasPrefix(flag + "=") {
                value = String(argument.dropFirst(flag.count + 1))
            }
            index = arguments.index(after: index)
        }
        if let value { return ("flag \(flag)", value) }
        return environment[variable].map { ("environment variable \(variable)", $0) }
    }

    func invalid(_ given: (source: String, value: String), expected: String) -> Invalid {
        Invalid(setting: name, source: given.source, value: given.value, expected: expected)
    }
}

/// Which global executor the process runs its tasks on: `--global-executor`, else `GLOBAL_EXECUTOR`,
/// else NIO's event loops.
enum GlobalExecutorChoice: String, CaseIterable, Sendable {
    /// NIO's event loops, running jobs as the generic executor (`GenericGlobalExecutor`).
    case eventLoops = "eventloops"
    /// Swift's default pool: the runtime's own executor, nothing installed.
    case swiftDefault = "default"

    static let setting = EarlySetting(name: "global executor", flag: "--global-executor", variable: "GLOBAL_EXECUTOR")

    static func read(arguments: [String], environment: [String: String]) throws(EarlySetting.Invalid) -> GlobalExecutorChoice {
        guard let given = setting.read(arguments: arguments, environment: environment) else { return .eventLoops }
        guard let choice = GlobalExecutorChoice(rawValue: given.value.lowercased()) else {
            throw setting.invalid(given, expected: "one of " + allCases.map(\.rawValue).joined(separator: ", "))
        }
        return choice
    }
}

/// How many event loops NIO's group runs: `--event-loops`, else `EVENT_LOOPS`, else nil, NIO's own
/// choice (`NIO_SINGLETON_GROUP_LOOP_COUNT`, else the cores this process may use, a container's CPU
/// limit included). Several daemons sharing one machine's cores each take their share.
enum EventLoopCount {
    static let setting = EarlySetting(name: "event loops", flag: "--event-loops", variable: "EVENT_LOOPS")
    /// NIO's own bounds for its group.
    static let allowed = 1...1024

    static func read(arguments: [String], environment: [String: String]) throws(EarlySetting.Invalid) -> Int? {
        guard let given = setting.read(arguments: arguments, environment: environment) else { return nil }
        guard let count = Int(given.value), allowed.contains(count) else {
            throw setting.invalid(given, expected: "a whole number from \(allowed.lowerBound) to \(allowed.upperBound)")
        }
        return count
    }
}

/// The `stockroom` command: serve, migrate, manage tokens, back up and restore, and move items as CSV.
struct App: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stockroom",
        abstract: "Inventory and per-device navigation state over HTTP, stored in SQLite or PostgreSQL.",
        subcommands: [Serve.self, Migrate.self, Token.self, Backup.self, Restore.self, Items.self],
        defaultSubcommand: Serve.self
    )
}
