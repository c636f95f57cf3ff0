import Foundation
import StockroomPostgres
import StockroomStore
import NIOCore

/// Why the server could not start, said so that an operator knows what to do.
public enum StartupError: Error, CustomStringConvertible {
    /// The database file could not be created, opened or migrated.
    case database(path: String, underlying: any Error)
    /// The PostgreSQL database could not be reached, opened or migrated.
    case postgres(url: String, underlying: any Error)
    /// The server could not listen on its address.
    case listen(host: String, port: Int, underlying: any Error)
    /// Something else stopped the start before the server listened (the demo items' write, storage).
    case start(underlying: any Error)

    public var description: String {
        switch self {
        case .database(let path, let underlying as DatabaseFileLock.Held):
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            return "cannot open the database \(absolute): \(underlying)."
        case .database(_, let underlying as AppDatabase.NotADatabaseFile):
            return "cannot open the database: \(underlying)."
        case .database(let path, let underlying as DatabaseFileLock.Serving):
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            return "cannot open the database \(absolute): \(underlying)."
        case .database(let path, let underlying):
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            return "cannot open the database \(absolute): \(Self.reason(underlying)). "
                + "Check that its folder exists or can be created and that this user may write both, "
                + "or choose another file with --db-path or DB_PATH."
        case .postgres(let url, let underlying):
            return "cannot open the PostgreSQL database \(url): \(PostgresStore.describe(underlying)). "
                + "Check that PostgreSQL runs, accepts this user and has this database, or fix --db-url or DB_URL."
        case .start(let underlying):
            return "could not start: \(Self.reason(underlying))"
        case .listen(let host, let port, _ as SocketAddressError.UnknownHost), .listen(let host, let port, _ as SocketAddressError):
            return "cannot listen on \(host):\(port): \(host) is neither an IP address nor a host name that resolves. "
                + "Choose an address of this machine (or 0.0.0.0) with --http-host or HTTP_HOST."
        case .listen(let host, let port, let underlying):
            let errno = (underlying as? IOError)?.errnoCode
            switch errno {
            case EADDRINUSE:
                return "cannot listen on \(host):\(port): the address is already in use. "
                    + "Stop the process that uses it (ss -ltnp | grep :\(port)), or choose another port with --http-port or HTTP_PORT."
            case EACCES:
                return "cannot listen on \(host):\(port): permission denied (ports below 1024 need privileges). "
                    + "Choose a port of 1024 or more with --http-port or HTTP_PORT."
            case EADDRNOTAVAIL:
                return "cannot listen on \(host):\(port): no network interface has this address. "
                    + "Choose an address of this machine (or 0.0.0.0) with --http-host or HTTP_HOST."
            default:
                return "cannot listen on \(host):\(port): \(Self.reason(underlying)). "
                    + "Check --http-host/HTTP_HOST and --http-port/HTTP_PORT."
            }
        }
    }

    static func reason(_ error: any Error) -> String {
        if let error = error as? CocoaError, let path = error.userInfo[NSFilePathErrorKey] as? String {
            let underlying = (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.localizedDescription
            return "\(underlying ?? error.localizedDescription) (\(path))"
        }
        if let error = error as? IOError { return error.description }
        return "\(error)"
    }
}
