import Foundation
import TestSupport
import Testing

@testable import StockroomServer

/// LibreOffice Calc (Debian's `libreoffice-calc-nogui`, run headless) as a real client of the
/// CSV export and import: it opens the export, saves it as a spreadsheet and back as CSV (its own
/// quoting, LF line ends, `TRUE` for a boolean), and that file imports back unchanged. CI installs
/// it and sets `STOCKROOM_REQUIRE_LIBREOFFICE=1`, so a missing LibreOffice fails there.
@Suite("LibreOffice and the CSV import", .enabled(if: LibreOffice.soffice != nil || LibreOffice.required, "LibreOffice is not installed"))
struct SpreadsheetTests {

    /// Converts `file` with headless LibreOffice into `folder`, with its own profile under `folder`.
    static func convert(_ file: String, to format: String, in folder: URL, inputFilter: String? = nil) async throws {
        let soffice = try #require(LibreOffice.soffice, "LibreOffice (libreoffice-calc-nogui) is not installed")
        // A `ChildProcess`, not Foundation's `Process` (whose `run()` crashes now and then with this
        // toolchain); polled, since LibreOffice takes seconds and a blocked cooperative thread would
        // stall every other test meanwhile.
        let arguments = ["-env:UserInstallation=file://\(folder.path)/profile", "--headless"]
            + (inputFilter.map { ["--infilter=\($0)"] } ?? []) + ["--convert-to", format, "--outdir", folder.path, file]
        let process = try ChildProcess(
            executable: soffice, arguments: arguments, directory: folder.path, environment: ProcessInfo.processInfo.environment)
        await process.exited(polling: .milliseconds(20))
        try #require(process.terminationStatus == 0, "soffice --convert-to \(format) \(file)")
    }

    @Test(.timeLimit(.minutes(10)))
    func aFileLibreOfficeSavedImportsBackUnchanged() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let server = LiveServer(port: port)
                let drafts = [
                    (#"=SUM(A1), "x""#, "null", #"{"inStock":{"quantity":0}}"#),
                    ("Mouse", #"{"name":"Sea, \"deep\"","red":0.1,"green":0.25,"blue":1}"#, #"{"outOfStock":{"isOnBackOrder":true}}"#),
                    ("Café ☕ -5 °C", "null", #"{"outOfStock":{"isOnBackOrder":false}}"#),
                    ("@home", #"{"name":"Teal","red":0,"green":0.5,"blue":0.5}"#, #"{"inStock":{"quantity":1000000}}"#),
                ]
                for (name, color, status) in drafts {
                    let json = #"{"name":\#(String(decoding: try JSONEncoder().encode(name), as: UTF8.self)),"color":\#(color),"status":\#(status)}"#
                    #expect(try await server.request(.POST, "/v1/items", token: app.editor, json: json).status == 201)
                }
                let folder = app.directory.appendingPathComponent("libreoffice")
                let export = folder.appendingPathComponent("items.csv")
                try FileManager.default.createDirectory(at: folder.appendingPathComponent("back"), withIntermediateDirectories: true)
                try await server.request(.GET, "/v1/items/export", token: app.viewer).body.write(to: export)
                // The export opened as CSV (comma, double quote, UTF-8) and saved as a workbook, then
                // the workbook saved as CSV again.
                try await Self.convert(export.path, to: "xlsx", in: folder, inputFilter: "CSV:44,34,76,1")
                try await Self.convert(
                    folder.appendingPathComponent("items.xlsx").path, to: "csv:Text - txt - csv (StarCalc):44,34,76,1",
                    in: folder.appendingPathComponent("back"))
                let saved = try Data(contentsOf: folder.appendingPathComponent("back/items.csv"))
                #expect(saved != (try Data(contentsOf: export)), "LibreOffice writes its own CSV")
                let answer = try await ImportRouteTests.post(port, Array(saved), token: app.editor)
                #expect(answer.status == 200, "\(answer.text)")
                let summary = try answer.summary()
                #expect((summary.inserted, summary.updated, summary.unchanged, summary.rejected) == (0, 0, drafts.count, 0), "\(answer.text)")
            }
        }
    }
}

/// Where LibreOffice is, and whether this run requires it.
enum LibreOffice {
    static let soffice = ["/usr/bin/soffice", "/usr/bin/libreoffice", "/usr/lib/libreoffice/program/soffice"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    static let required = ProcessInfo.processInfo.environment["STOCKROOM_REQUIRE_LIBREOFFICE"] == "1"
}
