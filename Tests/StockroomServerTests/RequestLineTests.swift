import Foundation
import HTTPTypes
import Logging
import Synchronization
import Testing

@testable import StockroomServer

/// The request log's fast path (`RequestLine`, formatted by the log's writer thread) writes the
/// line swift-log's `StreamLogHandler` writes for the same request, escapes as
/// `TerminalSafeLogHandler` does, and a `LogOutput` that cannot keep up drops lines and says so
/// instead of holding the thread that logs.
@Suite struct RequestLineTests {
    final class Captured: TextOutputStream, Sendable {
        let text = Mutex("")
        func write(_ string: String) { text.withLock { $0 += string } }
    }

    @Test func aRequestLineIsTheLineStreamLogHandlerWrites() async throws {
        let theirs = Captured()
        var stream = Logger(label: "stockroom") { label in
            TerminalSafeLogHandler(wrapping: StreamLogHandler(label: label, stream: theirs, metadataProvider: nil))
        }
        stream[metadataKey: "hb.request.id"] = "42"
        let path = "/v1/items/\u{1B}[31mred"
        stream.info(
            "request",
            metadata: ["http.method": "PUT", "http.path": .string(path), "http.status": "412", "duration_ms": "1.05"],
            source: RequestLine.source)

        let ours = try await readingPipe { writeEnd in
            var line = Logger(label: "stockroom") { label in
                TerminalSafeLogHandler(wrapping: LineLogHandler(label: label, output: LogOutput(fileDescriptor: writeEnd), metadataProvider: nil))
            }
            line[metadataKey: "hb.request.id"] = "42"
            let lines = try #require((line.handler as? any RequestLogHandler)?.requestLines)
            lines.record(
                method: .put, path: path, status: 412, elapsed: .microseconds(1_050), metadata: line.handler.metadata,
                metadataProvider: line.handler.metadataProvider)
        }
        let theirLine = theirs.text.withLock { $0 }
        // The same line after the timestamp (the two may straddle a second), the path escaped.
        #expect(ours.drop { $0 != " " } == theirLine.drop { $0 != " " })
        #expect(!ours.contains("\u{1B}"))
    }

    @Test func anOutputThatCannotKeepUpDropsLinesCountsThemAndSaysSo() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        let output = LogOutput(fileDescriptor: writeEnd)
        output.startBatching()
        // Nobody reads the pipe yet: the writer blocks once it is full, the buffer fills up to its
        // capacity, and then lines are dropped; every write returns.
        let line = String(repeating: "x", count: 999) + "\n"
        let written = 3 * LogOutput.capacity / line.utf8.count
        for _ in 0..<written { output.write(line) }
        #expect(output.droppedLines > 0)

        // A thread of its own: blocked in `read`, it must not hold one of the few threads tasks run on.
        let text = Mutex(Data())
        let finished = DispatchSemaphore(value: 0)
        Thread {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(readEnd, &chunk, chunk.count)
                if count <= 0 { break }
                text.withLock { $0.append(contentsOf: chunk[0..<count]) }
            }
            finished.signal()
        }.start()
        // Once it catches up, the writer says how many it dropped; a line after that is written.
        output.flush()
        output.write("after\n")
        output.flush()
        close(writeEnd)
        finished.wait()
        let lines = String(decoding: text.withLock { $0 }, as: UTF8.self).split(separator: "\n")
        let notices = lines.filter { $0.contains("log lines dropped") }
        let said = notices.compactMap { notice in
            notice.split(separator: " ").first { $0.hasPrefix("dropped=") }.flatMap { Int($0.dropFirst("dropped=".count)) }
        }
        let dropped = output.droppedLines
        #expect(said.reduce(0, +) == dropped)
        #expect(lines.count(where: { $0.hasPrefix("xxx") }) + dropped == written)
        #expect(lines.last == "after")
    }
}
