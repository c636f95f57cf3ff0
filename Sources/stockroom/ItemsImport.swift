import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import StockroomWire
import Synchronization

extension Items {
    /// `stockroom items import FILE`: the file sent to `POST /v1/items/import` as it is read, with
    /// a progress bar on a terminal (rows read, rows/s, percent of the file's bytes) and plain
    /// lines otherwise; then the summary, and the first rejected rows.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import items from a CSV file (the export's columns): new rows inserted, rows with an id updated or left as they are.",
            discussion: """
                With --on-error abort (the default) a rejected row means nothing is applied; with skip the valid rows are. \
                --dry-run checks every row and changes nothing. Exits 0 when the rows were applied (or checked), \
                2 when rejected rows stopped the import.
                """)

        @Argument(help: "The CSV file.")
        var file: String

        @Flag(name: .customLong("dry-run"), help: "Check every row and change nothing.")
        var dryRun = false

        @Option(name: .customLong("on-error"), help: "abort (nothing applied if a row is rejected) or skip (the valid rows applied).")
        var onError = "abort"

        @Option(name: .customLong("idempotency-key"), help: "Send the upload under this key: a retry with it is applied once.")
        var idempotencyKey: String?

        @Option(help: "The server (default: $STOCKROOM_URL, else http://127.0.0.1:8080).")
        var server: String?

        func validate() throws {
            guard ["abort", "skip"].contains(onError) else { throw ValidationError("--on-error is abort or skip") }
        }

        func run() async throws {
            let (base, token) = try Items.connection(server: server)
            guard let handle = FileHandle(forReadingAtPath: file) else { throw Failure("cannot read \(file)") }
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
            let progress = ImportProgress(size: size, terminal: isatty(STDERR_FILENO) == 1)
            var request = HTTPClientRequest(url: base + "/v1/items/import?dryRun=\(dryRun)&onError=\(onError)")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(name: "Content-Type", value: "text/csv")
            if let idempotencyKey { request.headers.add(name: "Idempotency-Key", value: idempotencyKey) }
            request.body = .stream(FileChunks(handle: handle, progress: progress), length: .known(Int64(size)))
            let response: HTTPClientResponse
            do {
                response = try await Items.client.execute(request, timeout: .hours(24))
            } catch {
                throw Failure("cannot send \(file) to \(base): \(error)")
            }
            let body = try await response.body.collect(upTo: 16 << 20)
            progress.finish()
            guard response.status == .ok else {
                throw Failure("the server answered \(response.status.code): \(String(buffer: body))")
            }
            let summary = try JSONCoding.decoder().decode(ItemImportSummary.self, from: Data(buffer: body))
            print(Self.describe(summary, onError: onError))
            if summary.rejected > 0, !summary.dryRun, onError == "abort" { throw ExitCode(2) }
        }

        /// The summary as lines: the counts, then up to 20 rejected rows.
        static func describe(_ summary: ItemImportSummary, onError: String) -> String {
            var lines: [String] = []
            let counts = "\(summary.inserted) inserted, \(summary.updated) updated, \(summary.unchanged) unchanged, \(summary.rejected) rejected"
            if summary.dryRun {
                lines.append("dry run, nothing changed: \(counts)")
            } else if summary.rejected > 0, onError == "abort" {
                lines.append("nothing imported: \(summary.rejected) rows rejected (--on-error skip applies the others)")
            } else {
                lines.append("imported: \(counts); feed cursor \(summary.cursor)")
            }
            for reject in summary.rejects.prefix(20) {
                lines.append("  line \(reject.line)\(reject.column.map { ", column \($0)" } ?? ""): \(reject.message) (\(reject.code))")
            }
            if summary.rejected > 20 { lines.append("  … and \(summary.rejected - 20) more") }
            return lines.joined(separator: "\n")
        }
    }
}

/// The file read in chunks as the request body pulls them (memory holds one chunk), each counted
/// by `progress`.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let handle: FileHandle
    let progress: ImportProgress

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle
        let progress: ImportProgress

        mutating func next() async throws -> ByteBuffer? {
            guard let data = try handle.read(upToCount: 256 << 10), !data.isEmpty else { return nil }
            progress.sent(data)
            return ByteBuffer(data: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: handle, progress: progress) }
}

/// What has been sent: bytes and rows (records read by `CSVReader` as they go, less the header),
/// shown as a bar redrawn on a terminal, or a plain line every five seconds otherwise.
final class ImportProgress: Sendable {
    private struct State {
        var reader = CSVReader(maxRecordBytes: .max)
        var bytes = 0
        var records = 0
        var shown = ContinuousClock.now
    }

    private let size: Int
    private let terminal: Bool
    private let started = ContinuousClock.now
    private let state = Mutex(State())

    init(size: Int, terminal: Bool) {
        self.size = size
        self.terminal = terminal
    }

    func sent(_ data: Data) {
        let line: String? = state.withLock { state in
            state.bytes += data.count
            // A file that is not CSV is the server's to name; here it only stops the count.
            try? state.reader.feed(data) { _ in state.records += 1 }
            let now = ContinuousClock.now
            guard now - state.shown >= (terminal ? .milliseconds(200) : .seconds(5)) else { return nil }
            state.shown = now
            return describe(state)
        }
        if let line { FileHandle.standardError.write(Data(line.utf8)) }
    }

    func finish() {
        let line = state.withLock { state in
            try? state.reader.finish { _ in state.records += 1 }
            return describe(state)
        }
        FileHandle.standardError.write(Data((line + (terminal ? "\n" : "")).utf8))
    }

    private func describe(_ state: State) -> String {
        let rows = max(0, state.records - 1)
        let elapsed = (ContinuousClock.now - started).components
        let seconds = max(0.001, Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
        let percent = size > 0 ? min(100, state.bytes * 100 / size) : 100
        let rate = Int(Double(rows) / seconds)
        guard terminal else { return "sent \(rows) rows, \(percent)% of the file, \(rate) rows/s\n" }
        let width = 30
        let filled = percent * width / 100
        return "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] \(percent)%  \(rows) rows  \(rate) rows/s "
    }
}
