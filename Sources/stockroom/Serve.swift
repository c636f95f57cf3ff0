import ArgumentParser
import Foundation
import Configuration
import Hummingbird
import StockroomCore
import StockroomServer

/// `stockroom serve`: run the HTTP server until SIGTERM or SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the HTTP server.")

    @Option(name: .customLong("http-host"), help: "Address to listen on (default 127.0.0.1; env HTTP_HOST).")
    var httpHost: String?

    @Option(name: .customLong("http-port"), help: "Port to listen on (default 8080; env HTTP_PORT).")
    var httpPort: Int?

    @Flag(help: "Seed the four demo items into an empty database and print an editor token.")
    var demo = false

    @OptionGroup var storage: StorageOptions

    func run() async throws {
        var flags: [AbsoluteConfigKey: ConfigValue] = [:]
        if let httpHost { flags["http.host"] = .init(.string(httpHost), isSecret: false) }
        if let httpPort { flags["http.port"] = .init(.int(httpPort), isSecret: false) }
        if demo { flags["demo"] = .init(.bool(true), isSecret: false) }
        let reader = try await storage.reader(flags: flags)
        let settings = try Startup.settings(reader)
        if settings.demo {
            let database = try await storage.openDatabase()
            _ = try await database.seedDemoItems()
            let token = try await database.createToken(user: UserID(stored: "demo"), role: .editor)
            // Written unbuffered: the server runs on, so buffered output would not show while it does.
            FileHandle.standardOutput.write(Data("Demo editor token (user demo): \(token.secret)\n  export TOKEN=\(token.secret)\n".utf8))
        }
        let app = try await buildApplication(reader: reader)
        try await app.runService()
    }
}
