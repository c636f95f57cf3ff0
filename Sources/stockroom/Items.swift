import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

/// `stockroom items export` and `import`: a running server's items as CSV (`GET /v1/items/export`,
/// `POST /v1/items/import`, in `ItemsImport.swift`).
struct Items: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A running server's items as a spreadsheet (the token from STOCKROOM_TOKEN).", subcommands: [Export.self, Import.self])

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write every item, or those matching --filter, as CSV, read at one feed cursor.")

        @Option(help: "Only the items matching this filter, in the feed's grammar (e.g. 'quantity <= 5').")
        var filter: String?

        @Option(name: .shortAndLong, help: "The file to write (default: standard output).")
        var output: String?

        @Option(help: "The server (default: $STOCKROOM_URL, else http://127.0.0.1:8080).")
        var server: String?

        func run() async throws {
            let (base, token) = try Items.connection(server: server)
            var url = base + "/v1/items/export"
            if let filter {
                url += "?filter=" + (filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? filter)
            }
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            let response: HTTPClientResponse
            do {
                response = try await Items.client.execute(request, timeout: .hours(24))
            } catch {
                throw Failure("cannot reach \(base): \(error)")
            }
            guard response.status == .ok else {
                let body = try await response.body.collect(upTo: 1 << 20)
                throw Failure("the server answered \(response.status.code): \(String(buffer: body))")
            }
            let handle: FileHandle
            if let output {
                guard FileManager.default.createFile(atPath: output, contents: nil) else { throw Failure("cannot write \(output)") }
                handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            } else {
                handle = .standardOutput
            }
            // A progress line on a terminal, for a file (standard output is the data itself).
            let progress = output != nil && isatty(STDERR_FILENO) == 1
            var bytes = 0
            var rows = 0
            var shown = ContinuousClock.now
            for try await chunk in response.body {
                try handle.write(contentsOf: chunk.readableBytesView)
                bytes += chunk.readableBytes
                rows += chunk.readableBytesView.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
                if progress, ContinuousClock.now - shown > .milliseconds(200) {
                    shown = .now
                    FileHandle.standardError.write(Data("\r\(max(0, rows - 1)) rows, \(bytes / 1_000_000) MB".utf8))
                }
            }
            if output != nil { try handle.close() }
            let cursor = response.headers.first(name: "Stockroom-Cursor") ?? "?"
            if let output {
                FileHandle.standardError.write(
                    Data("\(progress ? "\r" : "")exported \(max(0, rows - 1)) items to \(output) at feed cursor \(cursor)\n".utf8))
            }
        }
    }

    /// The commands' HTTP client: `HTTPClient.shared`'s configuration, but a server that refuses
    /// the connection, or cannot be reached, fails the command at once; the shared client retries
    /// until its connect timeout (90 s), which looks like a hang for a mistyped `--server`.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// The server's address and the bearer token (`STOCKROOM_TOKEN`).
    static func connection(server: String?) throws -> (base: String, token: String) {
        let environment = ProcessInfo.processInfo.environment
        guard let token = environment["STOCKROOM_TOKEN"], !token.isEmpty else {
            throw ValidationError("set STOCKROOM_TOKEN to a bearer token of the server")
        }
        return ((server ?? environment["STOCKROOM_URL"] ?? "http://127.0.0.1:8080").trimmingCharacters(in: ["/"]), token)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
