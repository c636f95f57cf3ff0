import Logging
import StockroomCore

/// A log handler that escapes control and bidirectional-override characters (`String.terminalSafe`)
/// in every message and metadata value before the wrapped handler writes them, so a stored value
/// (an item name, a user written before the input rule) can never move a terminal's cursor, change
/// its colours or hide part of a log line. The process installs it for every logger at startup.
/// Generic over what it wraps, so that it is no larger than that handler (see `LineLogHandler`).
public struct TerminalSafeLogHandler<Wrapped: LogHandler>: RequestLogHandler {
    private var wrapped: Wrapped

    /// Wraps `handler`.
    public init(wrapping handler: Wrapped) {
        self.wrapped = handler
    }

    public var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue.mapValues(TerminalSafeMetadata.safe) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue.map(TerminalSafeMetadata.safe) }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    /// The wrapped handler's request lines: a `RequestLine` escapes what it writes itself.
    public var requestLines: RequestLines? {
        (wrapped as? any RequestLogHandler)?.requestLines
    }

    public func log(event: LogEvent) {
        // Most lines need no escape: pass them on as they are, without copying message or metadata
        // (the request log writes one line per request).
        let message = event.message.description
        let unsafeMessage = message.needsTerminalEscape
        let unsafeMetadata = event.metadata?.values.contains { !TerminalSafeMetadata.isSafe($0) } ?? false
        guard unsafeMessage || unsafeMetadata else { return wrapped.log(event: event) }
        var event = event
        if unsafeMessage { event.message = Logger.Message(stringLiteral: message.terminalSafe) }
        if unsafeMetadata { event.metadata = event.metadata?.mapValues(TerminalSafeMetadata.safe) }
        wrapped.log(event: event)
    }
}

/// The escaping of metadata values, for `TerminalSafeLogHandler` and the request log's lines.
enum TerminalSafeMetadata {
    static func isSafe(_ value: Logger.Metadata.Value) -> Bool {
        switch value {
        case .string(let text): !text.needsTerminalEscape
        case .stringConvertible(let convertible): !convertible.description.needsTerminalEscape
        case .array(let values): values.allSatisfy(isSafe)
        case .dictionary(let values): values.values.allSatisfy(isSafe)
        }
    }

    /// The escaped value. A `stringConvertible` is escaped when it is written, not when it is set:
    /// Hummingbird sets a request id on every request's logger, and most are never logged, so an
    /// eager `description` and escape would be spent on every request for nothing.
    static func safe(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): text.needsTerminalEscape ? .string(text.terminalSafe) : value
        case .stringConvertible(let convertible) where convertible is TerminalSafeDescription: value
        case .stringConvertible(let convertible): .stringConvertible(TerminalSafeDescription(convertible))
        case .array(let values): .array(values.map(safe))
        case .dictionary(let values): .dictionary(values.mapValues(safe))
        }
    }
}

/// A metadata value's description, escaped (`String.terminalSafe`) each time it is read.
struct TerminalSafeDescription: CustomStringConvertible, Sendable {
    let base: any CustomStringConvertible & Sendable

    init(_ base: any CustomStringConvertible & Sendable) { self.base = base }

    var description: String { base.description.terminalSafe }
}
