import Foundation
import Logging
import Synchronization
import Testing

@testable import StockroomServer

/// `LineLogHandler` writes the lines swift-log's `StreamLogHandler` writes (what operators and
/// their log pipelines already parse), timestamp included.
@Suite struct LineLogHandlerTests {
    final class Captured: TextOutputStream, Sendable {
        let text = Mutex("")
        func write(_ string: String) { text.withLock { $0 += string } }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String { "disk on fire" }
    }

    @Test func linesMatchStreamLogHandlers() throws {
        let ours = Captured()
        let theirs = Captured()
        var line = Logger(label: "stockroom") { label in LineLogHandler(label: label, output: ours, metadataProvider: nil) }
        var stream = Logger(label: "stockroom") { label in StreamLogHandler(label: label, stream: theirs, metadataProvider: nil) }
        line[metadataKey: "hb.request.id"] = "42"
        stream[metadataKey: "hb.request.id"] = "42"
        for logger in [line, stream] {
            logger.info("request", metadata: ["http.path": "/v1/items/a", "http.status": "200", "duration_ms": "0.42"])
            logger.warning("plain")
            logger.error("failed", metadata: ["list": .array(["a", "b"]), "map": .dictionary(["k": "v"])])
        }
        let oursLines = ours.text.withLock { $0 }.split(separator: "\n")
        let theirLines = theirs.text.withLock { $0 }.split(separator: "\n")
        #expect(oursLines.count == 3)
        #expect(oursLines.map { $0.drop { $0 != " " } } == theirLines.map { $0.drop { $0 != " " } })
        // The timestamps: the same form (the two may straddle a second).
        for (a, b) in zip(oursLines, theirLines) {
            #expect(a.prefix { $0 != " " }.count == b.prefix { $0 != " " }.count)
        }
        #expect(LineLogHandler.Timestamps.format(0).count == theirLines[0].prefix { $0 != " " }.count)
    }

    /// Where keys meet: a provider's key over the handler's, a call's over both, an error's fields.
    @Test func laterMetadataWinsAsInStreamLogHandlers() throws {
        let ours = Captured()
        let theirs = Captured()
        let provider = Logger.MetadataProvider { ["both": "provided", "p": "only provided"] }
        var line = Logger(label: "") { label in LineLogHandler(label: label, output: ours, metadataProvider: provider) }
        var stream = Logger(label: "") { label in StreamLogHandler(label: label, stream: theirs, metadataProvider: provider) }
        line[metadataKey: "both"] = "handler"
        stream[metadataKey: "both"] = "handler"
        line[metadataKey: "h"] = "only handler"
        stream[metadataKey: "h"] = "only handler"
        for logger in [line, stream] {
            logger.info("one", metadata: ["both": "explicit", "z": "last", "a": "first"])
            logger.info("two")
            logger.error("three", error: Failure())
        }
        let oursLines = ours.text.withLock { $0 }.split(separator: "\n")
        let theirLines = theirs.text.withLock { $0 }.split(separator: "\n")
        #expect(oursLines.count == 3)
        #expect(oursLines.map { $0.drop { $0 != " " } } == theirLines.map { $0.drop { $0 != " " } })
    }
}
