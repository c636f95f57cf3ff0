import Foundation
import StockroomCore
import StockroomWire
import TestSupport
import Testing

@testable import StockroomServer

/// `GET /v1/items/export` against a live server on loopback: every item (or the filter's) as CSV,
/// read by Python's `csv` module, at the cursor its `Stockroom-Cursor` header names.
@Suite("CSV export, against a live server on loopback")
struct ExportRouteTests {
    /// Rows as Python's csv.DictReader reads `body` (a real client of the format), from a file
    /// opened as the csv module asks (`newline=''`). Python runs as a `ChildProcess`, not through
    /// Foundation's `Process`, whose `run()` crashes now and then with this toolchain (see there).
    static func pythonRows(_ body: Data) async throws -> [[String: String]] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString).csv")
        try body.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let read = "import csv, json, sys; print(json.dumps(list(csv.DictReader(open(sys.argv[1], newline='', encoding='utf-8'), strict=True))))"
        let (output, writeEnd) = ChildProcess.pipe()
        let python = try ChildProcess(
            executable: "/usr/bin/env", arguments: ["python3", "-c", read, file.path], directory: FileManager.default.currentDirectoryPath,
            environment: ProcessInfo.processInfo.environment, standardOutput: writeEnd, standardError: 2)
        close(writeEnd)
        // Read off the cooperative threads: the read blocks until Python exits.
        let json = try await Task.detached { try output.readToEnd() ?? Data() }.value
        await python.exited()
        try #require(python.terminationStatus == 0)
        return try JSONDecoder().decode([[String: String]].self, from: json)
    }

    @Test func theExportIsEveryItemAsCSVAtOneCursor() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let names = [#"=SUM(A1), "x""#, "-5 degrees", "@home", " padded ", "Café ☕", "+1 spare", "plain"]
                var items: [Item] = []
                for (index, name) in names.enumerated() {
                    let status = index == 2 ? #"{"outOfStock":{"isOnBackOrder":true}}"# : #"{"inStock":{"quantity":\#(index)}}"#
                    let color = index == 1 ? #"{"name":"Sea, \"deep\"","red":0.1,"green":0.25,"blue":1}"# : "null"
                    let json = #"{"name":\#(String(decoding: try JSONEncoder().encode(name), as: UTF8.self)),"color":\#(color),"status":\#(status)}"#
                    let created = try await server.request(.POST, "/v1/items", token: app.editor, json: json)
                    try #require(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
                    items.append(try JSONCoding.decoder().decode(Item.self, from: created.body))
                }
                let export = try await server.requestWithHeaders(.GET, "/v1/items/export", token: app.viewer)
                #expect(export.status == 200)
                #expect(export.headers["content-type"] == "text/csv; charset=utf-8")
                let head = try await server.request(.GET, "/v1/changes?since=now&limit=1", token: app.viewer)
                let cursor = try JSONCoding.decoder().decode(FeedBatchCursor.self, from: head.body).cursor
                #expect(export.headers["stockroom-cursor"] == cursor, "the cursor of the read: nothing was written since")
                let text = String(decoding: export.body, as: UTF8.self)
                #expect(text.hasPrefix(ItemCSV.columns.joined(separator: ",") + "\r\n"))

                let rows = try await Self.pythonRows(export.body)
                #expect(rows.count == items.count)
                for (row, item) in zip(rows, items) {
                    #expect(ItemCSV.unguarded(row["name"] ?? "") == item.name)
                    #expect(row["id"] == item.id.description && row["version"] == String(item.version))
                    switch item.status {
                    case .inStock(let quantity): #expect(row["status"] == "inStock" && row["quantity"] == String(quantity) && row["onBackOrder"] == "")
                    case .outOfStock(let backOrdered): #expect(row["status"] == "outOfStock" && row["quantity"] == "" && row["onBackOrder"] == String(backOrdered))
                    }
                    #expect(row["colorName"] == (item.color?.name ?? ""))
                    #expect(row["createdAt"] == Timestamp.format(item.createdAt))
                }
                // Formulas are guarded, for every spreadsheet that opens the file.
                #expect(rows.map { $0["name"] ?? "" }.filter { $0.hasPrefix("'") } == [#"'=SUM(A1), "x""#, "'-5 degrees", "'@home", "'+1 spare"])
                #expect(rows[1]["colorRed"] == "0.1" && rows[1]["colorName"] == #"Sea, "deep""#)

                // A filter: the matching items only; a bad one is 422 naming its position.
                let filtered = try await server.request(.GET, "/v1/items/export?filter=quantity%20%3E%3D%204", token: app.viewer)
                #expect(try await Self.pythonRows(filtered.body).map { $0["id"] } == items.filter {
                    if case .inStock(let quantity) = $0.status { return quantity >= 4 }
                    return false
                }.map(\.id.description))
                // The same filter as a form writes it (`URLSearchParams`, `curl --data-urlencode`).
                let plus = try await server.request(.GET, "/v1/items/export?filter=quantity+%3E%3D+4", token: app.viewer)
                #expect(plus.status == 200)
                #expect(plus.body == filtered.body)
                let bad = try await server.request(.GET, "/v1/items/export?filter=quantity%20%3E", token: app.viewer)
                #expect(bad.status == 422 && String(decoding: bad.body, as: UTF8.self).contains("at character 11"))
            }
        }
    }

    struct FeedBatchCursor: Decodable { let cursor: String }
}
