import Foundation
import StockroomCore
import StockroomWire
import Testing

/// The import's reading of a CSV file: the header, then each row as an item's fields or a
/// rejection naming its line and column.
@Suite("CSV import rows")
struct ItemImportTests {
    static func rows(_ text: String) throws -> (ItemImportHeader, [Result<ItemImportRow, ItemImportReject>]) {
        var reader = CSVReader()
        var records: [CSVReader.Record] = []
        try reader.feed(Array(text.utf8)) { records.append($0) }
        try reader.finish { records.append($0) }
        let header = try ItemImportHeader(records[0].fields)
        return (header, records.dropFirst().compactMap { header.row($0) })
    }

    static func reject(_ text: String) throws -> ItemImportReject? {
        let (_, rows) = try rows(text)
        guard case .failure(let reject)? = rows.first else { return nil }
        return reject
    }

    @Test func columnsInAnyOrderDefaultsAndBlankLines() throws {
        let (_, rows) = try Self.rows(
            "quantity,name,colorName,colorRed,colorGreen,colorBlue\n2,Lamp,,,,\n\n7,'=Mug,Teal,0,0.5,0.5\n")
        #expect(rows.count == 2, "the blank line is skipped")
        let lamp = try rows[0].get()
        #expect(lamp.line == 2 && lamp.id == nil && lamp.version == nil)
        #expect(lamp.fields.draft == Draft(name: "Lamp", color: nil, status: .inStock(quantity: 2)))
        let mug = try rows[1].get()
        #expect(mug.line == 4)
        #expect(mug.fields.name == "=Mug", "the formula guard's quote is removed")
        #expect(mug.fields.color == Color(name: "Teal", red: 0, green: 0.5, blue: 0.5))
    }

    @Test func anExportedRowReadsBackAsTheItem() throws {
        let id = ItemID.random()
        let item = Item(
            id: id, name: "+Desk, \"oak\"", color: Color(name: "Red", red: 1, green: 0.25, blue: 0), status: .outOfStock(isOnBackOrder: true),
            version: 3, createdAt: Date(timeIntervalSince1970: 1_700_000_000), updatedAt: Date(timeIntervalSince1970: 1_700_000_100))
        var writer = JSONWriter(capacity: 256)
        writer.raw(json: ItemCSV.header)
        ItemCSV.write(item, to: &writer)
        let (_, rows) = try Self.rows(String(decoding: writer.bytes, as: UTF8.self))
        let row = try rows[0].get()
        #expect(row.id == id && row.version == 3)
        #expect(row.fields.draft == Draft(name: item.name, color: item.color, status: item.status))
    }

    @Test func headersThatAreRefusedNameTheirColumn() throws {
        #expect(throws: ItemImportHeader.Refusal.self) { try ItemImportHeader(["name", "price"]) }
        do {
            _ = try ItemImportHeader(["name", "quantity", "name"])
            Issue.record("a repeated column was accepted")
        } catch {
            #expect(error.column == "name" && error.message.contains("twice"))
        }
        do {
            _ = try ItemImportHeader(["quantity"])
            Issue.record("a header without name was accepted")
        } catch {
            #expect(error.column == "name")
        }
        do {
            _ = try ItemImportHeader(["name", "Quantity"])
            Issue.record("an unknown column was accepted")
        } catch {
            #expect(error.column == "Quantity" && error.message.contains("position 2"))
        }
    }

    @Test(arguments: [
        ("name,quantity\n,1\n", "name"),
        ("name,quantity\nLamp,\n", "quantity"),
        ("name,quantity\nLamp,two\n", "quantity"),
        ("name,quantity\nLamp,-1\n", "quantity"),
        ("name,status,quantity\nLamp,sold,1\n", "status"),
        ("name,status,quantity\nLamp,outOfStock,1\n", "quantity"),
        ("name,status,onBackOrder\nLamp,outOfStock,maybe\n", "onBackOrder"),
        ("name,quantity,onBackOrder\nLamp,1,true\n", "onBackOrder"),
        ("name,quantity,colorName\nLamp,1,Teal\n", "colorName"),
        ("name,quantity,colorName,colorRed,colorGreen,colorBlue\nLamp,1,Teal,2,0,0\n", "colorRed"),
        ("name,quantity,id\nLamp,1,not-an-id\n", "id"),
        ("name,quantity,version\nLamp,1,2\n", "version"),
    ])
    func aBadCellIsRejectedNamingItsLineAndColumn(text: String, column: String) throws {
        let reject = try #require(try Self.reject(text))
        #expect(reject.line == 2)
        #expect(reject.column == column, "\(reject.message)")
        #expect(reject.code == "validationFailed")
    }

    @Test func aVersionWithoutAnIDSaysSo() throws {
        let reject = try #require(try Self.reject("name,quantity,id,version\nLamp,1,,2\n"))
        #expect(reject.column == "version")
        #expect(reject.message.hasPrefix("version is given without an id"), "\(reject.message)")
    }

    @Test func aRowWithTooFewOrTooManyFieldsIsRejected() throws {
        let (_, rows) = try Self.rows("name,quantity\nLamp\nMug,1,2\n")
        #expect(rows.count == 2)
        for (row, line) in zip(rows, [2, 3]) {
            guard case .failure(let reject) = row else {
                Issue.record("row \(line) was accepted")
                continue
            }
            #expect(reject.line == line && reject.column == nil && reject.message.contains("header has 2"))
        }
    }

    @Test func spreadsheetSpellingsAreRead() throws {
        // LibreOffice writes booleans in capitals and may pad cells.
        let (_, rows) = try Self.rows("name,status,onBackOrder,quantity\nLamp,outOfStock,TRUE,\nMug, inStock ,FALSE, 4 \n")
        #expect(try rows[0].get().fields.status == .outOfStock(isOnBackOrder: true))
        #expect(try rows[1].get().fields.status == .inStock(quantity: 4))
    }
}
