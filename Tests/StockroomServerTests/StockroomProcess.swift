import Foundation
import TestSupport
import Testing

/// The real `stockroom` binary, run as a child process from another working directory.
struct StockroomProcess {
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("stockroom")
    }

    /// Runs a subcommand to completion and returns its exit status and standard output.
    static func run(_ arguments: [String], in directory: URL) async throws -> (status: Int32, output: String) {
        let result = try await run(arguments, in: directory, environment: [:])
        return (result.status, result.output)
    }

    /// Runs a subcommand to completion with extra environment variables; returns status, stdout and stderr.
    static func run(_ arguments: [String], in directory: URL, environment: [String: String])
        async throws -> (status: Int32, output: String, error: String)
    {
        // Files, not pipes: a full pipe nobody reads would block the child.
        let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-out-\(UUID().uuidString)")
        let errorURL = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-err-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outputURL)
            try? FileManager.default.removeItem(at: errorURL)
        }
        let outputHandle = try FileHandle(forWritingTo: outputURL)
        let errorHandle = try FileHandle(forWritingTo: errorURL)
        let process = try ChildProcess(
            executable: binary.path, arguments: arguments, directory: directory.path,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            standardOutput: outputHandle.fileDescriptor, standardError: errorHandle.fileDescriptor)
        try outputHandle.close()
        try errorHandle.close()
        await process.exited()
        let output = String(decoding: (try? Data(contentsOf: outputURL)) ?? Data(), as: UTF8.self)
        let error = String(decoding: (try? Data(contentsOf: errorURL)) ?? Data(), as: UTF8.self)
        return (process.terminationStatus, output, error)
    }

    let process: ChildProcess
    let port: Int
    /// The server's stdout and stderr, and what was read of them while waiting for it to listen.
    let pipe: FileHandle
    let logSoFar: String

    /// Reads the server's output until it holds `text`; returns all of it read so far.
    func waitForOutput(containing text: String) async throws -> String {
        let pipe = self.pipe
        let start = logSoFar
        return try await Task.detached {
            var log = start
            while !log.contains(text) {
                let chunk = pipe.availableData
                if chunk.isEmpty { throw ProcessError.exitedEarly(log) }
                log += String(decoding: chunk, as: UTF8.self)
            }
            return log
        }.value
    }

    /// What the server has written since it started listening, without waiting for more, and
    /// whether it still runs (with its status if not): for the message of a failed expectation.
    func stateForDiagnosis() -> String {
        let descriptor = pipe.fileDescriptor
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            output.append(contentsOf: buffer[0..<count])
        }
        let state = process.isRunning ? "running" : "exited with status \(process.terminationStatus)"
        return "server \(state); its output since it listened:\n\(String(decoding: output.suffix(4000), as: UTF8.self))"
    }

    /// Starts `serve` on a free port and waits until it listens.
    static func serve(databasePath: String, in directory: URL, extra: [String] = [], shellPrefix: String? = nil) async throws -> StockroomProcess {
        var executable = binary.path
        var arguments = ["serve", "--db-path", databasePath, "--http-port", "0"] + extra
        if let shellPrefix {
            // For example `ulimit -n 200`, applied to the server alone.
            arguments = ["-c", "\(shellPrefix); exec \"$0\" \"$@\"", executable] + arguments
            executable = "/bin/sh"
        }
        let (pipe, writeEnd) = ChildProcess.pipe()
        let process = try ChildProcess(
            executable: executable, arguments: arguments, directory: directory.path,
            environment: ProcessInfo.processInfo.environment.merging(["LOG_LEVEL": "info"]) { $1 },
            standardOutput: writeEnd, standardError: writeEnd)
        close(writeEnd)
        let (port, log) = try await Task.detached {
            // Read the log until the server says where it listens.
            var log = ""
            while true {
                let chunk = pipe.availableData
                if chunk.isEmpty { throw ProcessError.exitedEarly(log) }
                log += String(decoding: chunk, as: UTF8.self)
                if let range = log.range(of: #"listening on 127\.0\.0\.1:(\d+)"#, options: .regularExpression),
                    let port = Int(log[range].split(separator: ":").last ?? "")
                {
                    return (port, log)
                }
            }
        }.value
        return StockroomProcess(process: process, port: port, pipe: pipe, logSoFar: log)
    }

    enum ProcessError: Error { case exitedEarly(String) }

    /// Waits for the process to exit and returns its status (-1, with an issue recorded, if it
    /// is still running after a minute).
    func waitForExit() async -> Int32 {
        // Polled rather than `waitUntilExit()`, which would hold one of the few cooperative threads
        // (as many as cores) for as long as the process runs, starving the in-process servers
        // other tests run meanwhile.
        do {
            try await eventually("the server exits", timeout: .seconds(60), interval: .milliseconds(20)) { !process.isRunning }
        } catch {
            return -1
        }
        return process.terminationStatus
    }
}
