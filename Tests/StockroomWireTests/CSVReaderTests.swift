import Foundation
import StockroomCore
import StockroomWire
import TestSupport
import Testing

/// The CSV reader the import will use: RFC 4180 records out of chunks cut anywhere, with the line
/// each starts on, and every malformed input refused naming its line.
@Suite("CSV reader")
struct CSVReaderTests {
    static func read(_ chunks: [[UInt8]], maxRecordBytes: Int = 1 << 20) throws -> [CSVReader.Record] {
        var reader = CSVReader(maxRecordBytes: maxRecordBytes)
        var records: [CSVReader.Record] = []
        for chunk in chunks { try reader.feed(chunk) { records.append($0) } }
        try reader.finish { records.append($0) }
        return records
    }

    static func read(_ text: String) throws -> [CSVReader.Record] { try read([Array(text.utf8)]) }

    @Test func recordsWithEitherLineEndAByteOrderMarkAndNoFinalBreak() throws {
        let records = try Self.read("\u{FEFF}name,quantity\r\nLamp,2\nMug,\r\n\nDesk,7")
        #expect(records.map(\.fields) == [["name", "quantity"], ["Lamp", "2"], ["Mug", ""], [""], ["Desk", "7"]])
        #expect(records.map(\.line) == [1, 2, 3, 4, 5])
    }

    @Test func quotedFieldsHoldCommasQuotesAndLineBreaks() throws {
        let records = try Self.read("a,b\n\"x, \"\"y\"\"\",\"two\nlines\"\nnext,\"\"\n")
        #expect(records.map(\.fields) == [["a", "b"], [#"x, "y""#, "two\nlines"], ["next", ""]])
        #expect(records.map(\.line) == [1, 2, 4], "the record after a two-line field starts on line 4")
    }

    /// Random fields, quoted as a writer would, cut into random chunks (down to one byte):
    /// always the same records.
    @Test(arguments: 0..<20)
    func chunksCutAnywhereReadTheSame(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let alphabet: [String] = ["a", "Z", " ", ",", "\"", "\n", "\r\n", "é", "☕", "'", "="]
        var expected: [[String]] = []
        var text = ""
        for _ in 0..<Int.random(in: 1...30, using: &random) {
            let fields = (0..<Int.random(in: 1...5, using: &random)).map { _ in
                (0..<Int.random(in: 0...6, using: &random)).map { _ in alphabet.randomElement(using: &random)! }.joined()
            }
            // A record of one empty field is a blank line: give it a character.
            let record = fields == [""] ? ["x"] : fields
            expected.append(record)
            text += record.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }.joined(separator: ",") + "\r\n"
        }
        let bytes = Array(text.utf8)
        var chunks: [[UInt8]] = []
        var index = 0
        while index < bytes.count {
            let size = Int.random(in: 1...max(1, bytes.count / 3), using: &random)
            chunks.append(Array(bytes[index..<min(bytes.count, index + size)]))
            index += size
        }
        #expect(try Self.read(chunks).map(\.fields) == expected)
        #expect(try Self.read(bytes.map { [$0] }).map(\.fields) == expected)
    }

    @Test func malformedInputIsRefusedNamingItsLine() {
        #expect(throws: CSVReader.Failure(line: 2, reason: .strayQuote)) { try Self.read("a,b\nLa\"mp,2\n") }
        #expect(throws: CSVReader.Failure(line: 2, reason: .strayQuote)) { try Self.read("a,b\n\"Lamp\"x,2\n") }
        #expect(throws: CSVReader.Failure(line: 3, reason: .unterminatedQuote)) { try Self.read("a,b\nc,d\n\"cut in the mid") }
        #expect(throws: CSVReader.Failure(line: 2, reason: .recordTooLong(limit: 16))) {
            try Self.read([Array("a,b\n\(String(repeating: "x", count: 40))\n".utf8)], maxRecordBytes: 16)
        }
        #expect(throws: CSVReader.Failure(line: 2, reason: .notUTF8)) { try Self.read([Array("a\n".utf8) + [0xFF, 0xFE] + Array("\n".utf8)]) }
    }

    /// The guard and its removal undo each other for any name, those that begin with `'` too, and
    /// a guarded cell never begins with a formula's first character.
    @Test func theFormulaGuardIsUndoneExactly() {
        let names = ["=1", "'=1", "''=1", "'''+", "@", "'@", "-", "\t", "'\r", "'", "''", "'a", "a'=", "", "plain"]
        for name in names {
            let cell = ItemCSV.guardedAgainstFormula(name)
            #expect(ItemCSV.unguarded(cell) == name, "\(name.debugDescription) -> \(cell.debugDescription)")
            #expect(!["=", "+", "-", "@", "\t", "\r"].contains(cell.unicodeScalars.first), "\(cell.debugDescription)")
        }
        #expect(ItemCSV.guardedAgainstFormula("'=1") == "''=1")
        #expect(ItemCSV.guardedAgainstFormula("'a") == "'a")
        #expect(ItemCSV.unguarded("'=1") == "=1")
        #expect(ItemCSV.unguarded("'a") == "'a")
    }

    /// The export's rows read back: every cell as written, formulas unguarded to the name.
    @Test func theExportReadsBack() throws {
        let names = [#"=SUM(A1), "x""#, "-5", " padded ", "Café ☕", "plain", "'=1+2", "''@x", "'", "'plain"]
        var json = JSONWriter()
        json.raw(json: ItemCSV.header)
        for (index, name) in names.enumerated() {
            let item = Item(
                id: RandomFilters.fixedIDs[index % 4], name: name, color: index == 1 ? Color(name: "Sea, \"deep\"", red: 0.1, green: 0.25, blue: 1) : nil,
                status: index == 2 ? .outOfStock(isOnBackOrder: true) : .inStock(quantity: index), version: index + 1,
                createdAt: Timestamp.date(milliseconds: 1_795_000_000_123), updatedAt: Timestamp.date(milliseconds: 1_795_000_000_456))
            ItemCSV.write(item, to: &json)
        }
        let records = try Self.read([json.bytes])
        #expect(records.first?.fields == ItemCSV.columns)
        #expect(records.dropFirst().map { ItemCSV.unguarded($0.fields[0]) } == names)
        #expect(records[2].fields[4...7] == ["Sea, \"deep\"", "0.1", "0.25", "1"])
        #expect(records[3].fields[1...3] == ["outOfStock", "", "true"])
        #expect(records[1].fields[10...11] == ["2026-11-18T11:06:40.123Z", "2026-11-18T11:06:40.456Z"])
    }
}
