import Foundation
import NIOSSL
import PostgresNIO

/// Where the PostgreSQL database is: a `postgres://` (or `postgresql://`) URL, as libpq reads it.
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require|verify-full][&host=/socket/dir]`.
/// The user, password and database may be percent-encoded; the port defaults to 5432 and the
/// database to the user's name; `host=` in the query names a Unix socket directory.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
    public var user: String
    public var password: String?
    public var host: String
    public var port: Int
    public var database: String
    /// The directory of PostgreSQL's Unix socket, when connecting through one.
    public var socketDirectory: String?
    public var sslMode: SSLMode

    /// As libpq reads `sslmode`: `prefer` (the default) and `require` encrypt without checking the
    /// server's certificate (`prefer` falls back to plain text when the server has no TLS);
    /// `verify-full` checks the certificate against the system's trusted roots and the host name.
    public enum SSLMode: String, Sendable, Hashable, CaseIterable {
        case disable, prefer, require
        case verifyFull = "verify-full"
    }

    public init(_ text: String) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw PostgresStoreError.url("the database URL must start with postgres:// (got \(Self.redacted(text)))")
        }
        guard let user = components.percentEncodedUser.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            throw PostgresStoreError.url("the database URL names no user (postgres://USER@HOST/DATABASE)")
        }
        self.user = user
        password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        socketDirectory = query["host"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        host = components.host ?? ""
        if host.isEmpty, socketDirectory == nil {
            throw PostgresStoreError.url("the database URL names no host (postgres://USER@HOST/DATABASE, or ?host=/socket/directory)")
        }
        port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw PostgresStoreError.url("the database URL's port must be 1-65535") }
        let path = components.percentEncodedPath.removingPercentEncoding ?? ""
        database = path.hasPrefix("/") ? String(path.dropFirst()) : path
        if database.isEmpty { database = user }
        if database.contains("/") { throw PostgresStoreError.url("the database URL's path must be one database name") }
        if let mode = query["sslmode"] {
            guard let sslMode = SSLMode(rawValue: mode) else {
                throw PostgresStoreError.url(
                    "the database URL's sslmode must be one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", ")) (got \(mode))")
            }
            self.sslMode = sslMode
        } else {
            sslMode = .prefer
        }
        let unknown = Set(query.keys).subtracting(["sslmode", "host"])
        if let name = unknown.sorted().first {
            throw PostgresStoreError.url("the database URL's parameter \(name) is not one stockroom reads (sslmode, host)")
        }
    }

    /// The URL without its password.
    public var description: String {
        var text = "postgres://\(user)@"
        text += socketDirectory.map { "?host=\($0)" } ?? "\(host):\(port)"
        return text.hasSuffix("@") ? text : text + "/\(database)" + (sslMode == .prefer ? "" : "?sslmode=\(sslMode.rawValue)")
    }

    /// `text` with its password, if any, replaced by ***.
    public static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text) else { return "an unreadable URL" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "an unreadable URL"
    }

    var tls: PostgresClient.Configuration.TLS {
        switch sslMode {
        case .disable: .disable
        case .prefer: .prefer(Self.encryptOnly)
        case .require: .require(Self.encryptOnly)
        case .verifyFull: .require(.makeClientConfiguration())
        }
    }

    func connectionTLS() throws -> PostgresConnection.Configuration.TLS {
        switch sslMode {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: Self.encryptOnly))
        case .require: .require(try NIOSSLContext(configuration: Self.encryptOnly))
        case .verifyFull: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
    }

    /// TLS that encrypts and checks no certificate (libpq's `prefer` and `require`), and so loads
    /// no trusted roots: it works on a system without a CA bundle.
    static var encryptOnly: TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        configuration.trustRoots = .certificates([])
        return configuration
    }

    /// The pool's configuration.
    func clientConfiguration() -> PostgresClient.Configuration {
        if let socketDirectory {
            return PostgresClient.Configuration(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        }
        return PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: database, tls: tls)
    }

    /// A single connection's configuration (the listener, the migrator).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        if let socketDirectory {
            return PostgresConnection.Configuration(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        }
        return PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: try connectionTLS())
    }
}
