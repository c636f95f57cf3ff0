import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import StockroomCore
import StockroomStorage
import StockroomWire
import Synchronization

/// `POST /v1/items/import`: a CSV file's rows (`ItemImportHeader`) read as the body arrives into a
/// spool (`ItemImportSpool`), then applied in one transaction (`Storage.importItems`); answered
/// with the summary (`ItemImportSummary`). A file that is not CSV the import reads (bad UTF-8, a
/// stray or unterminated quote, a record over 1 MiB, a bad header, no header) is `422` naming its
/// line or column; one over the byte or row limit is `413`; nothing is applied either way.
extension ItemsController {
    /// The longest record a file may hold, in bytes.
    static let maxImportRecordBytes = 1 << 20

    @Sendable func importCSV(_ request: Request, context: CallerContext) async throws -> Response {
        let user = context.caller.user
        let options = try Self.importOptions(request)
        if let contentType = request.headers.value(of: .contentType), !Self.namesCSV(contentType) {
            throw APIError(.unsupportedMediaType, "the import's body must be text/csv")
        }
        try request.refuseContentCoding()
        if let declared = request.headers.value(of: .contentLength).flatMap({ Int($0) }), declared > limits.importMaxBytes {
            throw APIError(.payloadTooLarge, "the file is larger than the import's limit of \(limits.importMaxBytes) bytes")
        }
        let key = try request.idempotencyKey()
        request.continueIfAsked(context)
        if Self.wants("text/csv", request) {
            return try await rejectsAsCSV(request, options: options, user: user, key: key)
        }
        guard Self.wants("application/x-ndjson", request) else {
            let upload = try await readUpload(request.body, progress: nil)
            return try await apply(upload, options: options, user: user, key: key).response
        }
        // NDJSON: progress lines at least every second while the file is read and applied, then
        // the summary (or the error) as the last line.
        let progress = ImportProgress()
        let body = request.body
        return Response(
            status: .ok, headers: [.contentType: "application/x-ndjson", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                let work = Task { () throws -> Reply in
                    defer { progress.finish() }
                    let upload = try await self.readUpload(body, progress: progress)
                    return try await self.apply(upload, options: options, user: user, key: key, progress: progress)
                }
                var written = ContinuousClock.now
                while !progress.isFinished {
                    try await Task.sleep(for: .milliseconds(100))
                    guard !progress.isFinished, ContinuousClock.now - written >= .seconds(1) else { continue }
                    written = .now
                    try await writer.write(ByteBuffer(string: progress.line))
                }
                let last: ByteBuffer
                do {
                    last = try await work.value.body
                } catch {
                    last = ByteBuffer(string: APIError(error).json())
                }
                try await writer.write(last)
                try await writer.write(ByteBuffer(string: "\n"))
                try await writer.finish(nil)
            })
    }

    /// A CSV upload read: its rows in the spool, the rejects found reading it, its digest.
    struct Upload {
        var file: ImportReading
        var digest: String
    }

    /// Reads the body's chunks through the CSV reader into the spool, within the byte and row limits
    /// (`rejectedRows`: where the rows rejected as they are read are kept whole, for a CSV answer).
    func readUpload(_ body: RequestBody, progress: ImportProgress?, rejectedRows: RejectedRows? = nil) async throws -> Upload {
        var file = try ImportReading(maxRows: limits.importMaxRows, rejectedRows: rejectedRows)
        var reader = CSVReader(maxRecordBytes: Self.maxImportRecordBytes)
        var hasher = SHA256()
        var bytes = 0
        do {
            for try await chunk in body {
                bytes += chunk.readableBytes
                guard bytes <= limits.importMaxBytes else {
                    throw APIError(.payloadTooLarge, "the file is larger than the import's limit of \(limits.importMaxBytes) bytes")
                }
                chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                try reader.feed(chunk.readableBytesView) { try file.read($0) }
                progress?.read(rows: file.rows, bytes: bytes)
            }
            try reader.finish { try file.read($0) }
        } catch let failure as CSVReader.Failure {
            throw APIError.validationFailed(nil, "the file is not CSV the import reads: \(failure)")
        }
        guard file.header != nil else { throw APIError.validationFailed(nil, "the file is empty: it has no header row") }
        try file.spool.finishWriting()
        progress?.read(rows: file.rows, bytes: bytes)
        return Upload(file: file, digest: Hex.string(hasher.finalize()))
    }

    /// `Accept: text/csv`: the rejected rows as CSV (`line,column,code,message`, then the row's own
    /// columns), in line order, streamed; the counts in `Stockroom-Import`, the cursor in
    /// `Stockroom-Cursor`. A keyed retry is answered with the stored JSON summary.
    func rejectsAsCSV(_ request: Request, options: ItemImportOptions, user: UserID, key: String?) async throws -> Response {
        var options = options
        options.listedRejects = .max
        let rejectedRows = try RejectedRows()
        let upload = try await readUpload(request.body, progress: nil, rejectedRows: rejectedRows)
        let result: ItemImportResult
        switch try await run(upload, options: options, user: user, key: key) {
        case .replayed(let stored): return try Reply(replaying: stored).response
        case .fresh(let fresh): result = fresh
        }
        let summary = Self.summary(
            result, dryRun: options.dryRun, readRejects: [], readRejected: upload.file.rejected, epoch: database.epoch)
        guard let header = upload.file.header else { throw APIError.validationFailed(nil, "the file is empty: it has no header row") }
        let headers: HTTPFields = [
            .contentType: "text/csv; charset=utf-8", .cacheControl: "no-store",
            .contentDisposition: #"attachment; filename="rejected.csv""#, FeedController.cursorHeader: summary.cursor,
            Self.countsHeader: "dryRun=\(summary.dryRun), inserted=\(summary.inserted), updated=\(summary.updated), "
                + "unchanged=\(summary.unchanged), rejected=\(summary.rejected)",
        ]
        let applyRejects = result.rejects
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                try await writer.write(ByteBuffer(bytes: ItemCSV.record(["line", "column", "code", "message"] + header.columns)))
                // The two lists are each in line order: merged as they are read.
                var pending = applyRejects[...]
                var chunk: [UInt8] = []
                func flush(_ writer: inout some ResponseBodyWriter) async throws {
                    guard !chunk.isEmpty else { return }
                    try await writer.write(ByteBuffer(bytes: chunk))
                    chunk.removeAll(keepingCapacity: true)
                }
                func applied(_ reject: ItemImportReject) -> [UInt8] {
                    ItemCSV.record(
                        ["\(reject.line)", reject.column ?? "", reject.code, reject.message] + (reject.row.map(header.cells) ?? []))
                }
                try rejectedRows.finishWriting()
                while let (line, record) = try rejectedRows.next() {
                    while let first = pending.first, first.line < line {
                        chunk += applied(first)
                        pending.removeFirst()
                    }
                    chunk += record
                    if chunk.count >= 1 << 16 { try await flush(&writer) }
                }
                for reject in pending { chunk += applied(reject) }
                try await flush(&writer)
                try await writer.finish(nil)
            })
    }

    static let countsHeader = HTTPField.Name("Stockroom-Import")!

    /// Applies an upload's rows and answers its summary (or the stored answer of a keyed retry).
    func apply(_ upload: Upload, options: ItemImportOptions, user: UserID, key: String?, progress: ImportProgress? = nil) async throws -> Reply {
        progress?.applying(upload.file.spool)
        switch try await run(upload, options: options, user: user, key: key) {
        case .fresh(let result):
            return Reply.json(
                writing: Self.summary(
                    result, dryRun: options.dryRun, readRejects: upload.file.rejects, readRejected: upload.file.rejected,
                    epoch: database.epoch))
        case .replayed(let stored):
            return try Reply(replaying: stored)
        }
    }

    /// Applies an upload's rows (`Storage.importItems`), a keyed one with its JSON summary stored.
    func run(_ upload: Upload, options: ItemImportOptions, user: UserID, key: String?) async throws -> Replayable<ItemImportResult> {
        let epoch = database.epoch
        let dryRun = options.dryRun
        let readRejects = upload.file.rejects
        let readRejected = upload.file.rejected
        let idempotency = key.map { key in
            IdempotentRequest<ItemImportResult>(
                key: IdempotencyKey(user: user, scope: .items, key: key),
                fingerprint: "POST /v1/items/import dryRun=\(options.dryRun) onError=\(options.onError.rawValue)\n\(upload.digest)"
            ) { result in
                guard case .success(let value) = result else { return nil }
                return Self.importReply(value, dryRun: dryRun, readRejects: readRejects, readRejected: readRejected, epoch: epoch).stored
            }
        }
        let origin = Origin(user: user, idempotencyKey: key)
        return try await database.importItems(
            upload.file.spool, rejectedBefore: readRejected, options: options, origin: origin, idempotency: idempotency)
    }

    /// Whether the request's `Accept` names `mediaType` (`application/x-ndjson`: progress lines;
    /// `text/csv`: the rejected rows as CSV).
    static func wants(_ mediaType: String, _ request: Request) -> Bool {
        request.headers[values: .accept].contains { $0.lowercased().contains(mediaType) }
    }

    /// `dryRun` and `onError` from the query: `400` for any other value.
    static func importOptions(_ request: Request) throws -> ItemImportOptions {
        var options = ItemImportOptions()
        switch try request.query("dryRun") {
        case nil, "false"?: options.dryRun = false
        case "true"?: options.dryRun = true
        default: throw APIError.invalidParameter("dryRun", "dryRun must be true or false")
        }
        if let raw = try request.query("onError") {
            guard let onError = ItemImportOptions.OnError(rawValue: raw) else {
                throw APIError.invalidParameter("onError", "onError must be abort or skip")
            }
            options.onError = onError
        }
        return options
    }

    /// The summary as JSON (what a keyed import stores).
    static func importReply(
        _ result: ItemImportResult, dryRun: Bool, readRejects: [ItemImportReject], readRejected: Int, epoch: String
    ) -> Reply {
        Reply.json(writing: summary(result, dryRun: dryRun, readRejects: readRejects, readRejected: readRejected, epoch: epoch))
    }

    /// The summary: the rows rejected as the file was read and as it was applied, in line order.
    /// Nothing applied (rejects under `abort`) counts nothing inserted, updated or unchanged.
    static func summary(
        _ result: ItemImportResult, dryRun: Bool, readRejects: [ItemImportReject], readRejected: Int, epoch: String
    ) -> ItemImportSummary {
        let rejects = (readRejects + result.rejects).sorted { $0.line < $1.line }.prefix(ItemImportResult.listedRejects)
        let counted = result.applied || dryRun
        return ItemImportSummary(
            dryRun: dryRun, inserted: counted ? result.inserted : 0, updated: counted ? result.updated : 0,
            unchanged: counted ? result.unchanged : 0, rejected: readRejected + result.rejected,
            rejects: rejects.map { ItemImportSummary.Reject(line: $0.line, column: $0.column, code: $0.code, message: $0.message) },
            cursor: FeedCursor(epoch: epoch, seq: result.head).encoded)
    }

    /// Whether a `Content-Type` names CSV (`text/csv`, or `application/csv` as some clients send),
    /// parameters and case aside.
    static func namesCSV(_ contentType: String) -> Bool {
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        return mediaType == "text/csv" || mediaType == "application/csv"
    }
}

/// What an import's file gave so far: its header, its rows in the spool, the rows rejected as they
/// were read (the first `ItemImportResult.listedRejects` kept), and the row count against the limit.
struct ImportReading {
    let maxRows: Int
    let spool: ItemImportSpool
    var header: ItemImportHeader?
    var rows = 0
    var rejected = 0
    var rejects: [ItemImportReject] = []

    /// Where rejected rows are kept whole (a CSV answer), when asked.
    let rejectedRows: RejectedRows?

    init(maxRows: Int, rejectedRows: RejectedRows? = nil) throws {
        self.maxRows = maxRows
        self.rejectedRows = rejectedRows
        spool = try ItemImportSpool()
    }

    mutating func read(_ record: CSVReader.Record) throws {
        guard let header else {
            // Blank lines are skipped, those before the header too.
            if record.fields.count == 1, record.fields[0].isEmpty { return }
            do {
                header = try ItemImportHeader(record.fields)
            } catch {
                throw APIError.validationFailed(error.column, "line \(record.line): \(error.message)")
            }
            return
        }
        guard let row = header.row(record) else { return }
        rows += 1
        guard rows <= maxRows else { throw APIError(.payloadTooLarge, "the file has more than the import's limit of \(maxRows) rows") }
        switch row {
        case .success(let row):
            try spool.append(row)
        case .failure(let reject):
            rejected += 1
            if rejects.count < ItemImportResult.listedRejects { rejects.append(reject) }
            try rejectedRows?.append(
                line: reject.line,
                // The cells as the import read them, guarded again as `record` writes every cell: a
                // cell sent guarded (`'=x`) comes back as sent, not guarded twice.
                ItemCSV.record(["\(reject.line)", reject.column ?? "", reject.code, reject.message] + record.fields.map(ItemCSV.unguarded)))
        }
    }
}

/// What an import has done so far, for its NDJSON progress lines: rows and bytes read from the
/// upload, then rows taken from the spool by the transaction that applies them.
final class ImportProgress: Sendable {
    private struct State {
        var rows = 0
        var bytes = 0
        var applying: ItemImportSpool?
    }

    private let state = Mutex(State())
    private let finished = Atomic(false)

    /// Whether the import has its answer (or failed).
    var isFinished: Bool { finished.load(ordering: .acquiring) }

    func finish() {
        finished.store(true, ordering: .releasing)
    }

    func read(rows: Int, bytes: Int) {
        state.withLock {
            $0.rows = rows
            $0.bytes = bytes
        }
    }

    func applying(_ spool: ItemImportSpool) {
        state.withLock { $0.applying = spool }
    }

    /// `{"progress": {"phase", "rows", "bytes"}}` and a line break.
    var line: String {
        let (phase, rows, bytes) = state.withLock { state in
            state.applying.map { ("applying", $0.taken, state.bytes) } ?? ("reading", state.rows, state.bytes)
        }
        return #"{"progress":{"phase":"\#(phase)","rows":\#(rows),"bytes":\#(bytes)}}"# + "\n"
    }
}

/// The rows an import rejected as it read them, each kept whole as a CSV record (`line, column,
/// code, message`, then its cells as the import read them, guarded again) in a temporary file,
/// for the CSV answer: memory holds a buffer, not the rows.
final class RejectedRows: @unchecked Sendable {
    // @unchecked: written by the request's task, then read by its response's, one after the other.
    private let file: TemporaryFile

    init() throws {
        file = try TemporaryFile("import-rejects")
    }

    /// Keeps a rejected row's record: its line, its length, its bytes.
    func append(line: Int, _ record: [UInt8]) throws {
        try file.write(Int64(line))
        try file.write(Int64(record.count))
        try file.write(record)
    }

    func finishWriting() throws {
        try file.finishWriting()
    }

    /// The next kept row, in the order kept (line order).
    func next() throws -> (line: Int, record: [UInt8])? {
        guard try !file.atEnd else { return nil }
        let line = Int(try file.readInt())
        return (line, Array(try file.readBytes(Int(try file.readInt()))))
    }
}
