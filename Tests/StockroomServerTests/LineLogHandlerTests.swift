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

    /// Hummingbird sets a request id on every request's logger, copying its handler: a handler
    /// within an existential's three-word inline buffer is copied without a heap box of its own.
    @Test func theInstalledHandlerFitsAnExistentialsInlineBuffer() {
        #expect(MemoryLayout<TerminalSafeLogHandler<LineLogHandler>>.size <= 3 * MemoryLayout<Int>.size)
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

    enum RequestLocal {
        @TaskLocal static var id = "none"
    }

    /// Written to a batching `LogOutput`, a line is formatted by its writer thread: the same line,
    /// with the metadata provider's values as they were where it was logged (a task-local here).
    @Test func batchedLinesAreStreamLogHandlersWithTheProvidersValuesWhereLogged() async throws {
        let theirs = Captured()
        let provider = Logger.MetadataProvider { ["task": .string(RequestLocal.id)] }
        let oursLines = try await readingPipe { writeEnd in
            let output = LogOutput(fileDescriptor: writeEnd)
            output.startBatching()
            var line = Logger(label: "stockroom") { label in LineLogHandler(label: label, output: output, metadataProvider: provider) }
            var stream = Logger(label: "stockroom") { label in StreamLogHandler(label: label, stream: theirs, metadataProvider: provider) }
            line[metadataKey: "hb.request.id"] = "42"
            stream[metadataKey: "hb.request.id"] = "42"
            for logger in [line, stream] {
                for request in 0..<100 {
                    RequestLocal.$id.withValue("request \(request)") {
                        logger.info("request", metadata: ["http.path": "/v1/items/\(request)", "http.status": "200"])
                    }
                }
                logger.error("failed", error: Failure(), metadata: ["list": .array(["a", "b"])])
            }
            output.flush()
        }.split(separator: "\n")
        let theirLines = theirs.text.withLock { $0 }.split(separator: "\n")
        #expect(oursLines.count == 101)
        #expect(oursLines.map { $0.drop { $0 != " " } } == theirLines.map { $0.drop { $0 != " " } })
        #expect(oursLines[7].contains("task=request 7"))
    }
}
