import Foundation
import Logging
import Synchronization

/// swift-log's `StreamLogHandler` line, `2026-11-23T19:00:00+0000 info stockroom: key=value … [Source] message`,
/// written to a `LogOutput`, with the timestamp formatted once per second instead of once per line
/// (`localtime` and `strftime` into a fresh 255-byte buffer per line, for the request log one per
/// request), and, when the output has a writer thread (`LogOutput.startBatching`), formatted there
/// rather than on the thread that logs. `LineLogHandlerTests` checks the lines against `StreamLogHandler`'s own.
public struct LineLogHandler: RequestLogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata = Logger.Metadata()
    /// What does not change per logger, kept apart so that the handler fits in an existential's
    /// inline buffer: Hummingbird sets a request id on each request's logger, which copies the
    /// handler, and a larger handler would be a heap box (and its fields' retains) per request.
    private var shared: Shared

    private final class Shared: Sendable {
        let label: String
        let output: any TextOutputStream & Sendable
        /// `output` when it is a `LogOutput`, which takes the line's bytes as they are.
        let lineOutput: LogOutput?
        let metadataProvider: Logger.MetadataProvider?

        init(label: String, output: any TextOutputStream & Sendable, metadataProvider: Logger.MetadataProvider?) {
            self.label = label
            self.output = output
            self.lineOutput = output as? LogOutput
            self.metadataProvider = metadataProvider
        }
    }

    public init(
        label: String, output: any TextOutputStream & Sendable,
        metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) {
        shared = Shared(label: label, output: output, metadataProvider: metadataProvider)
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { shared.metadataProvider }
        set { shared = Shared(label: shared.label, output: shared.output, metadataProvider: newValue) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Where this handler's request lines go, when a `LogOutput` formats them (`RequestLine`).
    public var requestLines: RequestLines? {
        shared.lineOutput.map { RequestLines(output: $0, label: shared.label) }
    }

    public func log(event: LogEvent) {
        let record = Record(
            second: time(nil), label: shared.label, event: event, handlerMetadata: metadata,
            provided: shared.metadataProvider?.get())
        if let lineOutput = shared.lineOutput {
            // Formatted by the output's writer thread when it has one, so that formatting the request
            // log line does not hold the event loop before the response goes out.
            lineOutput.write(record)
        } else {
            var output = shared.output
            output.write(String(decoding: record.line(), as: UTF8.self))
        }
    }

    /// What one line says, taken when it was logged; `line()` formats it.
    struct Record: Sendable {
        /// When it was logged (the line's timestamp is that second's).
        let second: time_t
        let label: String
        let event: LogEvent
        let handlerMetadata: Logger.Metadata
        /// The metadata provider's values, read when it was logged (they may be task-local).
        let provided: Logger.Metadata?

        /// The line's bytes.
        func line() -> [UInt8] {
            var line: [UInt8] = []
            append(to: &line)
            return line
        }

        /// Appends the line's bytes (ending in a newline).
        func append(to line: inout [UInt8]) {
            // The keys of the handler, the provider, the call and the error, later ones winning, as
            // StreamLogHandler merges them: collected in that order into one array (no merged
            // dictionaries), sorted stably by key, and of equal keys only the last written.
            var pairs: [(key: String, value: Logger.Metadata.Value)] = []
            pairs.reserveCapacity(handlerMetadata.count + (event.metadata?.count ?? 0) + 2)
            for (key, value) in handlerMetadata { pairs.append((key, value)) }
            if let provided {
                for (key, value) in provided { pairs.append((key, value)) }
            }
            if let explicit = event.metadata {
                for (key, value) in explicit { pairs.append((key, value)) }
            }
            if let error = event.error {
                pairs.append(("error.message", "\(error)"))
                pairs.append(("error.type", "\(String(reflecting: type(of: error)))"))
            }
            LineLogHandler.append(
                second: second, level: event.level, label: label, pairs: &pairs, source: event.source,
                message: event.message.description, to: &line)
        }
    }

    /// Appends a line as `StreamLogHandler` writes it: `pairs` sorted stably by key, and of equal
    /// keys only the last one written.
    static func append(
        second: time_t, level: Logger.Level, label: String, pairs: inout [(key: String, value: Logger.Metadata.Value)],
        source: String, message: String, to line: inout [UInt8]
    ) {
        pairs.sort { $0.key < $1.key }

        // Built as bytes, not by String appends, which cost more per line.
        line.reserveCapacity(line.count + 256)
        line.append(contentsOf: LineLogHandler.timestamps.text(for: second).utf8)
        line.append(UInt8(ascii: " "))
        line.append(contentsOf: level.rawValue.utf8)
        if !label.isEmpty {
            line.append(UInt8(ascii: " "))
            line.append(contentsOf: label.utf8)
        }
        line.append(UInt8(ascii: ":"))
        for index in pairs.indices where index == pairs.count - 1 || pairs[index + 1].key != pairs[index].key {
            line.append(UInt8(ascii: " "))
            line.append(contentsOf: pairs[index].key.utf8)
            line.append(UInt8(ascii: "="))
            if case .string(let text) = pairs[index].value {
                line.append(contentsOf: text.utf8)
            } else {
                line.append(contentsOf: pairs[index].value.description.utf8)
            }
        }
        line.append(contentsOf: " [".utf8)
        line.append(contentsOf: source.utf8)
        line.append(contentsOf: "] ".utf8)
        line.append(contentsOf: message.utf8)
        line.append(UInt8(ascii: "\n"))
    }

    static let timestamps = Timestamps()

    /// The local time as `%Y-%m-%dT%H:%M:%S%z`, formatted once per second.
    final class Timestamps: Sendable {
        private let last = Mutex<(second: time_t, text: String)>((-1, ""))

        /// The text of `second` (cached while lines keep coming in the same second).
        func text(for second: time_t) -> String {
            last.withLock { last in
                if last.second != second {
                    last = (second, Self.format(second))
                }
                return last.text
            }
        }

        static func format(_ second: time_t) -> String {
            var second = second
            var local = tm()
            guard localtime_r(&second, &local) != nil else { return "<unknown>" }
            return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
                let count = strftime(buffer.baseAddress!, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
                return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress!, count: count), as: UTF8.self)
            }
        }
    }
}
