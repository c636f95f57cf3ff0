import StockroomCore

/// The import's reading of a CSV file's records (`CSVReader`): the header names the columns (any
/// order, `ItemCSV.columns`), and each later record becomes an item's fields, with the id and
/// version it names, or a rejection naming its line and column. What a row does to the items
/// (insert, update, unchanged, a stale version) is decided where it is applied (`WriteRules`).
public struct ItemImportHeader: Sendable {
    /// Where each named column is in a record.
    private let positions: [String: Int]
    /// How many fields the header has.
    public let count: Int
    /// The header's column names, in its order.
    public let columns: [String]

    /// Why a header is not one the import reads: `422 validationFailed` naming the column, before
    /// any row is read.
    public struct Refusal: Error, Hashable, Sendable {
        /// The column at fault (nil: the header as a whole).
        public let column: String?
        public let message: String
    }

    /// Reads the header record: every column known and named once, `name` among them.
    public init(_ fields: [String]) throws(Refusal) {
        var positions: [String: Int] = [:]
        for (index, raw) in fields.enumerated() {
            let column = raw.trimmingSpaces()
            guard ItemCSV.columns.contains(column) else {
                throw Refusal(
                    column: column,
                    message: "unknown column \"\(String(column.prefix(100)))\" at position \(index + 1); the columns are "
                        + ItemCSV.columns.joined(separator: ", "))
            }
            guard positions.updateValue(index, forKey: column) == nil else {
                throw Refusal(column: column, message: "column \"\(column)\" is named twice")
            }
        }
        guard positions["name"] != nil else { throw Refusal(column: "name", message: "the header has no name column") }
        self.positions = positions
        count = fields.count
        columns = positions.sorted { $0.value < $1.value }.map(\.key)
    }

    /// A record of the file after the header, read as an item's row; nil for a blank line.
    public func row(_ record: CSVReader.Record) -> Result<ItemImportRow, ItemImportReject>? {
        if record.fields.count == 1, record.fields[0].isEmpty, count > 1 { return nil }
        guard record.fields.count == count else {
            return .failure(
                ItemImportReject(
                    line: record.line, column: nil, code: "validationFailed",
                    message: "the row has \(record.fields.count) field\(record.fields.count == 1 ? "" : "s") where the header has \(count)"))
        }
        do throws(ItemImportReject) {
            return .success(try read(record))
        } catch {
            return .failure(error)
        }
    }

    private func read(_ record: CSVReader.Record) throws(ItemImportReject) -> ItemImportRow {
        // Every cell as the export wrote it: one `'` before a formula's first character removed.
        func cell(_ column: String) -> String? {
            guard let position = positions[column] else { return nil }
            let value = record.fields[position]
            return value.isEmpty ? nil : ItemCSV.unguarded(value)
        }
        func reject(_ column: String?, _ message: String) -> ItemImportReject {
            ItemImportReject(line: record.line, column: column, code: "validationFailed", message: message)
        }
        func number(_ column: String) throws(ItemImportReject) -> Double? {
            guard let text = cell(column) else { return nil }
            guard let value = Double(text.trimmingSpaces()), value.isFinite else { throw reject(column, "\(column) must be a number") }
            return value
        }
        func integer(_ column: String) throws(ItemImportReject) -> Int? {
            guard let text = cell(column) else { return nil }
            guard let value = Int(text.trimmingSpaces()) else { throw reject(column, "\(column) must be a whole number") }
            return value
        }

        let name = cell("name") ?? ""
        let status: Status
        switch cell("status")?.trimmingSpaces() {
        case nil, "inStock"?:
            guard let quantity = try integer("quantity") else { throw reject("quantity", "quantity is required for an in-stock row") }
            if let back = cell("onBackOrder"), back.trimmingSpaces().lowercased() != "false" {
                throw reject("onBackOrder", "onBackOrder is for an out-of-stock row")
            }
            status = .inStock(quantity: quantity)
        case "outOfStock"?:
            guard cell("quantity") == nil else { throw reject("quantity", "quantity is for an in-stock row") }
            switch cell("onBackOrder")?.trimmingSpaces().lowercased() {
            case nil, "false"?: status = .outOfStock(isOnBackOrder: false)
            case "true"?: status = .outOfStock(isOnBackOrder: true)
            default: throw reject("onBackOrder", "onBackOrder must be true or false")
            }
        case let other?:
            throw reject("status", "status must be inStock or outOfStock, not \"\(String(other.prefix(50)))\"")
        }
        let color: Color?
        let colorName = cell("colorName")
        let components = (try number("colorRed"), try number("colorGreen"), try number("colorBlue"))
        switch (colorName, components) {
        case (nil, (nil, nil, nil)):
            color = nil
        case (let name?, (let red?, let green?, let blue?)):
            color = Color(name: name, red: red, green: green, blue: blue)
        default:
            throw reject("colorName", "colorName, colorRed, colorGreen and colorBlue are given all four or none")
        }
        var id: ItemID?
        if let text = cell("id") {
            guard let parsed = ItemID(text.trimmingSpaces()) else { throw reject("id", "id is not an item id") }
            id = parsed
        }
        let version = try integer("version")
        if let version {
            guard id != nil else { throw reject("version", "version is given without an id: it names the version of the item the id names") }
            guard version >= 1 else { throw reject("version", "version must be 1 or more") }
        }
        let fields: ValidDraft
        do {
            fields = try ValidDraft(Draft(name: name, color: color, status: status))
        } catch {
            guard case .validationFailed(let field, let message) = error else { throw reject(nil, error.message) }
            throw reject(field.map(Self.column(ofDraftField:)) ?? nil, message)
        }
        return ItemImportRow(line: record.line, id: id, version: version, fields: fields)
    }

    /// The CSV column of a draft field named in a validation failure.
    static func column(ofDraftField field: String) -> String {
        switch field {
        case "color.name": "colorName"
        case "color.red": "colorRed"
        case "color.green": "colorGreen"
        case "color.blue": "colorBlue"
        case "status.inStock.quantity": "quantity"
        default: field
        }
    }
}

/// An import row read: the fields it gives an item, and the item it names.
public struct ItemImportRow: Hashable, Sendable {
    /// The file's line it starts on (1 = the header).
    public var line: Int
    /// The item it updates, or creates with this id; nil: a new item.
    public var id: ItemID?
    /// Applies only while the item is at this version.
    public var version: Int?
    public var fields: ValidDraft

    public init(line: Int, id: ItemID?, version: Int?, fields: ValidDraft) {
        self.line = line
        self.id = id
        self.version = version
        self.fields = fields
    }
}

/// A rejected row: its line, the column at fault when one is, the contract's error code and why;
/// for a row rejected as it was applied, the row as it was read.
public struct ItemImportReject: Error, Hashable, Sendable {
    public var line: Int
    public var column: String?
    public var code: String
    public var message: String
    public var row: ItemImportRow?

    public init(line: Int, column: String?, code: String, message: String, row: ItemImportRow? = nil) {
        self.line = line
        self.column = column
        self.code = code
        self.message = message
        self.row = row
    }
}

extension ItemImportHeader {
    /// A row read as the cells it would have in this header's columns (`createdAt` and `updatedAt`
    /// empty: the import does not keep them).
    public func cells(_ row: ItemImportRow) -> [String] {
        let fields = row.fields
        return columns.map { column in
            switch column {
            case "name": return fields.name
            case "status": if case .inStock = fields.status { return "inStock" } else { return "outOfStock" }
            case "quantity": if case .inStock(let quantity) = fields.status { return "\(quantity)" } else { return "" }
            case "onBackOrder": if case .outOfStock(let back) = fields.status { return "\(back)" } else { return "" }
            case "colorName": return fields.color?.name ?? ""
            case "colorRed": return fields.color.map { "\($0.red)" } ?? ""
            case "colorGreen": return fields.color.map { "\($0.green)" } ?? ""
            case "colorBlue": return fields.color.map { "\($0.blue)" } ?? ""
            case "id": return row.id?.description ?? ""
            case "version": return row.version.map { "\($0)" } ?? ""
            default: return ""
            }
        }
    }
}

extension ItemCSV {
    /// One CSV record of `cells` (each quoted when it must be, text a spreadsheet would take for a
    /// formula guarded), with CRLF.
    public static func record(_ cells: [String]) -> [UInt8] {
        var json = JSONWriter(capacity: 64 + cells.reduce(0) { $0 + $1.utf8.count + 3 })
        for (index, cell) in cells.enumerated() {
            if index > 0 { json.raw(",") }
            text(cell, to: &json)
        }
        json.raw("\r\n")
        return json.bytes
    }
}

extension String {
    /// Without leading and trailing spaces (a spreadsheet may pad cells).
    func trimmingSpaces() -> String {
        var slice = Substring(self)
        while slice.first == " " { slice.removeFirst() }
        while slice.last == " " { slice.removeLast() }
        return String(slice)
    }
}
