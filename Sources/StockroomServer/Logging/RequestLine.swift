import Foundation
import HTTPTypes
import Logging
import StockroomCore

/// One request's log line, recorded on the event loop as a few values and formatted by the log's
/// writer thread (`LogOutput`): the line `logger.info("request", metadata: [duration_ms,
/// http.method, http.path, http.status])` would write, without building its message, metadata
/// dictionary and strings before the response goes out.
struct RequestLine: Sendable {
    let second: time_t
    let label: String
    /// The logger's metadata (Hummingbird's `hb.request.id`), already escaped by `TerminalSafeLogHandler`.
    let metadata: Logger.Metadata
    /// The logger's metadata provider's values, read when the request ended.
    let provided: Logger.Metadata?
    let method: HTTPRequest.Method
    let path: String
    let status: Int
    let elapsed: Duration

    /// The module the request log's lines name, as swift-log names the logging call's module.
    static let source = "StockroomServer"

    func append(to line: inout [UInt8]) {
        var pairs: [(key: String, value: Logger.Metadata.Value)] = []
        pairs.reserveCapacity(metadata.count + (provided?.count ?? 0) + 4)
        for (key, value) in metadata { pairs.append((key, value)) }
        if let provided {
            for (key, value) in provided { pairs.append((key, TerminalSafeMetadata.safe(value))) }
        }
        pairs.append(("http.method", .string(method.rawValue.terminalSafe)))
        pairs.append(("http.path", .string(path.terminalSafe)))
        pairs.append(("http.status", .string(String(status))))
        pairs.append(("duration_ms", .string(Self.milliseconds(elapsed))))
        LineLogHandler.append(
            second: second, level: .info, label: label, pairs: &pairs, source: Self.source, message: "request", to: &line)
    }

    /// `elapsed` in milliseconds with two decimals (`0.42`), without `String(format:)`'s cost.
    static func milliseconds(_ elapsed: Duration) -> String {
        let hundredths = elapsed.components.seconds * 100_000 + elapsed.components.attoseconds / 10_000_000_000_000
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

/// Where a logger's request lines go when its handler writes to a `LogOutput`: the middleware
/// records a `RequestLine` there instead of logging through swift-log.
public struct RequestLines: Sendable {
    let output: LogOutput
    let label: String

    /// Records a request's line with the request logger's metadata and its provider's values.
    func record(
        method: HTTPRequest.Method, path: String, status: Int, elapsed: Duration, metadata: Logger.Metadata,
        metadataProvider: Logger.MetadataProvider?
    ) {
        output.write(
            RequestLine(
                second: time(nil), label: label, metadata: metadata, provided: metadataProvider?.get(), method: method, path: path,
                status: status, elapsed: elapsed))
    }
}

/// A log handler that can say where its request lines go.
public protocol RequestLogHandler: LogHandler {
    /// Where the request log's lines go, or nil to log them through `log(event:)`.
    var requestLines: RequestLines? { get }
}
