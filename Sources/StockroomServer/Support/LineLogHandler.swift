import Foundation
import Logging
import Synchronization

/// swift-log's `StreamLogHandler` line, `2026-11-23T19:00:00+0000 info stockroom: key=value … [Source] message`,
/// written to a `LogOutput`, with the timestamp formatted once per second instead of once per line
/// (`localtime` and `strftime` into a fresh 255-byte buffer per line, for the request log one per
/// request). `LineLogHandlerTests` checks the lines against `StreamLogHandler`'s own.
public struct LineLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    public var metadata = Logger.Metadata()

    private let label: String
    private let output: any TextOutputStream & Sendable

    public init(
        label: String, output: any TextOutputStream & Sendable,
        metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) {
        self.label = label
        self.output = output
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        // The keys of the handler, the provider, the call and the error, later ones winning, as
        // StreamLogHandler merges them; collected in a small array instead of merged dictionaries
        // (two dictionary copies and a merge per line, for the request log one per request: perf
        // showed their generic tuple metadata lookups beside the line's own formatting).
        var pairs: [(key: String, value: Logger.Metadata.Value)] = []
        pairs.reserveCapacity(metadata.count + (event.metadata?.count ?? 0) + 2)
        for (key, value) in metadata { pairs.append((key, value)) }
        func put(_ key: String, _ value: Logger.Metadata.Value) {
            if let index = pairs.firstIndex(where: { $0.key == key }) {
                pairs[index].value = value
            } else {
                pairs.append((key, value))
            }
        }
        if let provided = metadataProvider?.get() {
            for (key, value) in provided { put(key, value) }
        }
        if let explicit = event.metadata {
            for (key, value) in explicit { put(key, value) }
        }
        if let error = event.error {
            put("error.message", "\(error)")
            put("error.type", "\(String(reflecting: type(of: error)))")
        }
        pairs.sort { $0.key < $1.key }

        var line = Self.timestamps.now()
        line.reserveCapacity(line.utf8.count + 160)
        line += " "
        line += event.level.rawValue
        if !label.isEmpty {
            line += " "
            line += label
        }
        line += ":"
        for pair in pairs {
            line += " "
            line += pair.key
            line += "="
            line += pair.value.description
        }
        line += " ["
        line += event.source
        line += "] "
        line += event.message.description
        line += "\n"
        var output = output
        output.write(line)
    }

    static let timestamps = Timestamps()

    /// The local time as `%Y-%m-%dT%H:%M:%S%z`, formatted once per second.
    final class Timestamps: Sendable {
        private let last = Mutex<(second: time_t, text: String)>((-1, ""))

        func now() -> String {
            let second = time(nil)
            return last.withLock { last in
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
