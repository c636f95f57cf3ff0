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
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty { merged.merge(provided) { $1 } }
        if let explicit = event.metadata, !explicit.isEmpty { merged.merge(explicit) { $1 } }
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        var line = Self.timestamps.now()
        line.reserveCapacity(line.utf8.count + 160)
        line += " "
        line += event.level.rawValue
        if !label.isEmpty {
            line += " "
            line += label
        }
        line += ":"
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            line += " \(key)=\(value)"
        }
        line += " [\(event.source)] \(event.message)\n"
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
