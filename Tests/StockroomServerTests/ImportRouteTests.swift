import AsyncHTTPClient
import Configuration
import Foundation
import NIOCore
import StockroomCore
import StockroomWire
import Testing

@testable import StockroomServer

/// `POST /v1/items/import` against a live server on loopback: an export imports back unchanged;
/// `abort`, `skip` and a dry run; every kind of bad file a clear answer that changes nothing.
@Suite("CSV import, against a live server on loopback")
struct ImportRouteTests {
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
        func summary() throws -> ItemImportSummary { try JSONCoding.decoder().decode(ItemImportSummary.self, from: body) }
    }

    /// Sends `csv` to the import (query `query`), as `text/csv` unless `contentType` says otherwise.
    static func post(
        _ port: Int, _ csv: [UInt8], query: String = "", token: String, contentType: String = "text/csv", key: String? = nil,
        accept: String? = nil
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/items/import\(query)")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: contentType)
        if let accept { request.headers.add(name: "Accept", value: accept) }
        if let key { request.headers.add(name: "Idempotency-Key", value: key) }
        request.body = .bytes(ByteBuffer(bytes: csv))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let body = try await response.body.collect(upTo: 64 << 20)
        let headers = Dictionary(response.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        return Answer(status: Int(response.status.code), headers: headers, body: Data(buffer: body))
    }

    static func post(_ port: Int, _ csv: String, query: String = "", token: String, key: String? = nil) async throws -> Answer {
        try await post(port, Array(csv.utf8), query: query, token: token, key: key)
    }

    /// Every item, by the list route.
    static func items(_ server: LiveServer, token: String) async throws -> [Item] {
        let page = try await server.request(.GET, "/v1/items?limit=500", token: token)
        struct Page: Decodable { let items: [Item] }
        return try JSONCoding.decoder().decode(Page.self, from: page.body).items
    }

    @Test func anExportImportsBackUnchanged() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let server = LiveServer(port: port)
                let names = [#"=SUM(A1), "x""#, "-5 degrees", " padded", "Café ☕", "@home, \"quoted\"", "'=1+2", "''-x", "'plain"]
                for (index, name) in names.enumerated() {
                    let status = index == 2 ? #"{"outOfStock":{"isOnBackOrder":true}}"# : #"{"inStock":{"quantity":\#(index)}}"#
                    let color = index == 1 ? #"{"name":"Sea, \"deep\"","red":0.1,"green":0.25,"blue":1}"# : "null"
                    let json = #"{"name":\#(String(decoding: try JSONEncoder().encode(name), as: UTF8.self)),"color":\#(color),"status":\#(status)}"#
                    #expect(try await server.request(.POST, "/v1/items", token: app.editor, json: json).status == 201)
                }
                let before = try await Self.items(server, token: app.viewer)
                let export = try await server.requestWithHeaders(.GET, "/v1/items/export", token: app.viewer)
                let imported = try await Self.post(port, Array(export.body), token: app.editor)
                #expect(imported.status == 200, "\(imported.text)")
                let summary = try imported.summary()
                #expect((summary.inserted, summary.updated, summary.unchanged, summary.rejected) == (0, 0, before.count, 0))
                #expect(summary.cursor == export.headers["stockroom-cursor"], "nothing was written")
                #expect(try await Self.items(server, token: app.viewer) == before)
            }
        }
    }

    @Test func abortSkipAndADryRun() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let server = LiveServer(port: port)
                let csv = "name,quantity,status,onBackOrder\nLamp,2,,\nMug,,,\n\n\"Desk, oak\",,outOfStock,TRUE\nChair,x,,\n"
                // abort (the default): two rows rejected, nothing applied.
                let aborted = try await Self.post(port, csv, token: app.editor)
                #expect(aborted.status == 200, "\(aborted.text)")
                let abortSummary = try aborted.summary()
                #expect((abortSummary.inserted, abortSummary.rejected, abortSummary.dryRun) == (0, 2, false))
                #expect(abortSummary.rejects.map(\.line) == [3, 6])
                #expect(abortSummary.rejects.map(\.column) == ["quantity", "quantity"])
                #expect(try await Self.items(server, token: app.viewer).isEmpty)
                // A dry run says what skip would do, and does nothing.
                let dry = try await Self.post(port, csv, query: "?dryRun=true&onError=skip", token: app.editor)
                let drySummary = try dry.summary()
                #expect((drySummary.inserted, drySummary.rejected, drySummary.dryRun) == (2, 2, true))
                // The answer's keys in the contract's order, the same bytes every time.
                #expect(dry.body == Data(drySummary.jsonBytes), "\(dry.text)")
                #expect(dry.text.hasPrefix(#"{"dryRun":true,"inserted":2,"updated":0,"unchanged":0,"rejected":2,"rejects":[{"line":3,"#))
                #expect(try await Self.items(server, token: app.viewer).isEmpty)
                // skip applies the valid rows, one change each.
                let skipped = try await Self.post(port, csv, query: "?onError=skip", token: app.editor)
                let skipSummary = try skipped.summary()
                #expect((skipSummary.inserted, skipSummary.rejected) == (2, 2))
                let items = try await Self.items(server, token: app.viewer)
                #expect(Set(items.map(\.name)) == ["Lamp", "Desk, oak"])
                #expect(items.first { $0.name == "Desk, oak" }?.status == .outOfStock(isOnBackOrder: true))
                let feed = try await server.drain(since: drySummary.cursor, token: app.viewer)
                #expect(feed.changes.count == 2 && feed.cursor == skipSummary.cursor)
            }
        }
    }

    /// Each bad file or request: its status and what its message names; nothing applied, and the
    /// server answers the next request.
    @Test func badFilesAreClearAnswersThatChangeNothing() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let server = LiveServer(port: port)
                let header = Array("name,quantity\n".utf8)
                let cases: [(what: String, body: [UInt8], query: String, contentType: String, status: Int, names: String)] = [
                    ("binary", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0xFF, 0xD8, 0x00, 0x01], "", "text/csv", 422, "not UTF-8"),
                    ("bad UTF-8 in a row", header + Array("Lamp,1\nMu".utf8) + [0xC3, 0x28] + Array(",2\n".utf8), "", "text/csv", 422, "line 3"),
                    ("a 10 MB line", header + Array("Lamp,1\n".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 10 << 20) + Array(",1\n".utf8),
                     "", "text/csv", 422, "line 3: a record longer than"),
                    ("cut inside a quote", header + Array("Lamp,1\n\"Mug,2\n".utf8), "", "text/csv", 422, "line 3: the file ends inside a quoted field"),
                    ("empty", [], "", "text/csv", 422, "no header row"),
                    ("blank lines only", Array("\n\r\n\n".utf8), "", "text/csv", 422, "no header row"),
                    ("no name column", Array("quantity\n1\n".utf8), "", "text/csv", 422, "no name column"),
                    ("an unknown column", Array("name,price\nLamp,3\n".utf8), "", "text/csv", 422, "unknown column \\\"price\\\""),
                    ("JSON", Array("{\"name\":\"Lamp\"}".utf8), "", "application/json", 415, "text/csv"),
                    ("onError", header + Array("Lamp,1\n".utf8), "?onError=ignore", "text/csv", 400, "onError"),
                    ("dryRun", header + Array("Lamp,1\n".utf8), "?dryRun=yes", "text/csv", 400, "dryRun"),
                ]
                for bad in cases {
                    let answer = try await Self.post(port, bad.body, query: bad.query, token: app.editor, contentType: bad.contentType)
                    #expect(answer.status == bad.status, "\(bad.what): \(answer.text)")
                    #expect(answer.text.contains(bad.names), "\(bad.what): \(answer.text)")
                    #expect(try await Self.items(server, token: app.viewer).isEmpty, "\(bad.what)")
                }
                let viewer = try await Self.post(port, "name,quantity\nLamp,1\n", token: app.viewer)
                #expect(viewer.status == 403)
                #expect(try await server.request(.GET, "/health", token: nil).status == 200)
            }
        }
    }

    /// Blank lines before the header are skipped as those after it; lines keep the file's numbers.
    @Test func blankLinesBeforeTheHeaderAreSkipped() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let answer = try await Self.post(port, "\r\n\nname,quantity\nLamp,1\n\nMug,many\n", query: "?onError=skip", token: app.editor)
                #expect(answer.status == 200, "\(answer.text)")
                let summary = try answer.summary()
                #expect(summary.inserted == 1)
                #expect(summary.rejects.map(\.line) == [6])
                #expect(try await Self.items(LiveServer(port: port), token: app.viewer).map(\.name) == ["Lamp"])
            }
        }
    }

    @Test func overTheByteOrRowLimitIs413() async throws {
        try await withTestApp { app in
            let settings: [AbsoluteConfigKey: ConfigValue] = [
                "limits.importMaxBytes": .init(.int(4096), isSecret: false), "limits.importMaxRows": .init(.int(10), isSecret: false),
            ]
            try await app.live(settings: settings) { client in
                let port = try #require(client.port)
                let rows = (0..<11).map { "Item \($0),1\n" }.joined()
                let tooManyRows = try await Self.post(port, "name,quantity\n" + rows, token: app.editor)
                #expect(tooManyRows.status == 413 && tooManyRows.text.contains("10 rows"), "\(tooManyRows.text)")
                let big = "name,quantity\n" + String(repeating: "Item,1\n", count: 1000)
                let tooBig = try await Self.post(port, big, token: app.editor)
                #expect(tooBig.status == 413 && tooBig.text.contains("4096 bytes"), "\(tooBig.text)")
                #expect(try await Self.items(LiveServer(port: port), token: app.viewer).isEmpty)
            }
        }
    }

    /// 100,000 rejected rows: all counted, the first 1,000 listed in line order, none applied.
    @Test func aHundredThousandRejectedRows() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                var csv = "name,quantity\nKept,1\n"
                csv.reserveCapacity(1 << 20)
                for _ in 0..<100_000 { csv += " ,1\n" }
                let answer = try await Self.post(port, csv, query: "?onError=skip", token: app.editor)
                #expect(answer.status == 200, "\(answer.text.prefix(300))")
                let summary = try answer.summary()
                #expect((summary.inserted, summary.rejected, summary.rejects.count) == (1, 100_000, 1_000))
                #expect(summary.rejects.first?.line == 3 && summary.rejects.last?.line == 1_002)
                #expect(summary.rejects.allSatisfy { $0.column == "name" && $0.code == "validationFailed" })
            }
        }
    }

    /// `Accept: application/x-ndjson`: a progress line at least every second while a slow upload
    /// is read, then the summary as the last line; a refused file's error as the last line.
    @Test func progressLinesWhileASlowUploadIsReadThenTheSummary() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/items/import?onError=skip")
                request.method = .POST
                request.headers.add(name: "Authorization", value: "Bearer \(app.editor)")
                request.headers.add(name: "Content-Type", value: "text/csv")
                request.headers.add(name: "Accept", value: "application/x-ndjson")
                let chunks = ["name,quantity\n"] + (0..<5).map { part in (0..<100).map { "Item \(part)-\($0),\($0)\n" }.joined() }
                let stream = AsyncStream<ByteBuffer> { continuation in
                    Task {
                        for chunk in chunks {
                            continuation.yield(ByteBuffer(string: chunk))
                            try? await Task.sleep(for: .milliseconds(600))
                        }
                        continuation.finish()
                    }
                }
                request.body = .stream(stream, length: .unknown)
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
                #expect(response.status == .ok)
                #expect(response.headers.first(name: "Content-Type") == "application/x-ndjson")
                let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
                let lines = body.split(separator: "\n").map(String.init)
                let progress = lines.dropLast()
                #expect(progress.count >= 2, "\(body)")
                struct Line: Decodable {
                    struct Progress: Decodable { let phase: String; let rows: Int; let bytes: Int }
                    let progress: Progress
                }
                let read = try progress.map { try JSONDecoder().decode(Line.self, from: Data($0.utf8)).progress }
                #expect(read.allSatisfy { $0.phase == "reading" || $0.phase == "applying" })
                #expect(read.map(\.bytes) == read.map(\.bytes).sorted() && (read.last?.bytes ?? 0) > 0, "\(body)")
                let summary = try JSONCoding.decoder().decode(ItemImportSummary.self, from: Data(try #require(lines.last).utf8))
                #expect(summary.inserted == 500 && summary.rejected == 0)

                let bad = try await Self.post(port, Array("name,price\nLamp,1\n".utf8), token: app.editor, contentType: "text/csv", accept: "application/x-ndjson")
                #expect(bad.status == 200 && bad.text.contains("validationFailed") && bad.text.contains("unknown column"), "\(bad.text)")
            }
        }
    }

    /// `Accept: text/csv`: the rejected rows as CSV, those found reading the file (their cells as
    /// sent) and those found applying it (a stale version) in line order; the counts in a header.
    @Test func theRejectedRowsAsCSV() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let server = LiveServer(port: port)
                let created = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Lamp"))
                let lamp = try JSONCoding.decoder().decode(Item.self, from: created.body)
                let csv = "name,quantity,id,version\nDesk,1,,\n\"=bad, \"\"x\"\"\",many,,\nLamp,5,\(lamp.id),9\nChair,,,\nStool,2,,\n"
                let answer = try await Self.post(port, Array(csv.utf8), query: "?onError=skip", token: app.editor, accept: "text/csv")
                #expect(answer.status == 200, "\(answer.text)")
                #expect(answer.headers["content-type"] == "text/csv; charset=utf-8")
                #expect(answer.headers["stockroom-import"] == "dryRun=false, inserted=2, updated=0, unchanged=0, rejected=3")
                #expect(answer.headers["stockroom-cursor"]?.hasPrefix("c1.") == true)
                let rows = try await ExportRouteTests.pythonRows(answer.body)
                #expect(rows.map { $0["line"] } == ["3", "4", "5"])
                #expect(rows.map { $0["column"] } == ["quantity", "version", "quantity"])
                #expect(rows.map { $0["code"] } == ["validationFailed", "preconditionFailed", "validationFailed"])
                #expect(rows[0]["name"] == #"'=bad, "x""# && rows[0]["quantity"] == "many", "the cells as sent, formula-guarded")
                #expect(rows[1]["name"] == "Lamp" && rows[1]["id"] == lamp.id.description && rows[1]["version"] == "9")
                #expect(rows[2]["name"] == "Chair" && rows[2]["quantity"] == "")
            }
        }
    }

    /// A rejects file, fixed and imported again, gives the values the first upload meant: a cell
    /// sent formula-guarded (`'=x`, the name `=x`) comes back as sent, not guarded twice.
    @Test func aFixedRejectsFileImportsTheValuesFirstSent() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let csv = "name,quantity\n'=sum,abc\n''=two,abc\n=plain,abc\n"
                let answer = try await Self.post(port, Array(csv.utf8), query: "?onError=skip", token: app.editor, accept: "text/csv")
                #expect(answer.status == 200, "\(answer.text)")
                let rows = try await ExportRouteTests.pythonRows(answer.body)
                #expect(rows.map { $0["name"] } == ["'=sum", "''=two", "'=plain"], "each name guarded once")
                // Fixed: the quantity a spreadsheet user would type, the names left as they came.
                let fixed = "name,quantity\n" + rows.map { "\($0["name"] ?? ""),1\n" }.joined()
                let again = try await Self.post(port, Array(fixed.utf8), token: app.editor)
                #expect(again.status == 200, "\(again.text)")
                let names = try await Self.items(LiveServer(port: port), token: app.editor).map(\.name)
                #expect(names.sorted() == ["'=two", "=plain", "=sum"])
            }
        }
    }

    @Test func aRetriedUploadWithItsKeyIsAppliedOnce() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let csv = "name,quantity\nLamp,1\nMug,2\n"
                let first = try await Self.post(port, csv, token: app.editor, key: "upload-1")
                let again = try await Self.post(port, csv, token: app.editor, key: "upload-1")
                #expect(first.status == 200 && again.status == 200)
                #expect(again.headers["idempotency-replayed"] == "true")
                #expect(try again.summary() == (try first.summary()))
                #expect(try await Self.items(LiveServer(port: port), token: app.viewer).count == 2)
                let other = try await Self.post(port, csv + "Desk,3\n", token: app.editor, key: "upload-1")
                #expect(other.status == 422 && other.text.contains("idempotencyKeyReused"), "\(other.text)")
            }
        }
    }
}
