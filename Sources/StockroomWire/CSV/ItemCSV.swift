import StockroomCore

/// Items as CSV rows (RFC 4180, CRLF line ends, UTF-8), the export's and the import's columns:
/// `name, status, quantity, onBackOrder, colorName, colorRed, colorGreen, colorBlue, id, version,
/// createdAt, updatedAt`. A field is quoted when it holds a comma, a quote, a CR or an LF, or starts
/// or ends with a space; a quote inside is doubled. A text cell a spreadsheet would take for a
/// formula (it begins with `=`, `+`, `-`, `@`, a tab or a CR) is written with a leading `'`, which
/// the import removes again (`unguarded`), so that an export imports back unchanged.
public enum ItemCSV {
    /// The columns, in the order the export writes them.
    public static let columns = [
        "name", "status", "quantity", "onBackOrder", "colorName", "colorRed", "colorGreen", "colorBlue", "id", "version", "createdAt",
        "updatedAt",
    ]

    /// The header row.
    public static var header: [UInt8] { Array((columns.joined(separator: ",") + "\r\n").utf8) }

    /// Appends `item`'s row.
    public static func write(_ item: Item, to bytes: inout [UInt8]) {
        text(item.name, to: &bytes)
        bytes.append(comma)
        switch item.status {
        case .inStock(let quantity):
            bytes += Array("inStock,\(quantity),,".utf8)
        case .outOfStock(let isOnBackOrder):
            bytes += Array("outOfStock,,\(isOnBackOrder)".utf8)
            bytes.append(comma)
        }
        if let color = item.color {
            text(color.name, to: &bytes)
            for component in [color.red, color.green, color.blue] {
                bytes.append(comma)
                number(component, to: &bytes)
            }
        } else {
            bytes += Array(",,,".utf8)
        }
        bytes.append(comma)
        bytes += Array("\(item.id),\(item.version),".utf8)
        bytes += Array(Timestamp.format(item.createdAt).utf8)
        bytes.append(comma)
        bytes += Array(Timestamp.format(item.updatedAt).utf8)
        bytes += [UInt8(ascii: "\r"), UInt8(ascii: "\n")]
    }

    /// A text cell: guarded against formulas, quoted when it must be.
    static func text(_ value: String, to bytes: inout [UInt8]) {
        let guarded = guardedAgainstFormula(value)
        let needsQuotes =
            guarded.utf8.contains { $0 == comma || $0 == quote || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }
            || guarded.first == " " || guarded.last == " "
        guard needsQuotes else {
            bytes += Array(guarded.utf8)
            return
        }
        bytes.append(quote)
        for byte in guarded.utf8 {
            if byte == quote { bytes.append(quote) }
            bytes.append(byte)
        }
        bytes.append(quote)
    }

    /// `value` with a leading `'` when a spreadsheet would read it as a formula.
    public static func guardedAgainstFormula(_ value: String) -> String {
        guard let first = value.unicodeScalars.first, formulaStarts.contains(first) else { return value }
        return "'" + value
    }

    /// A cell as the import reads it: one leading `'` before a formula's first character removed.
    public static func unguarded(_ cell: String) -> String {
        let scalars = cell.unicodeScalars
        guard scalars.first == "'", let second = scalars.dropFirst().first, formulaStarts.contains(second) else { return cell }
        return String(cell.unicodeScalars.dropFirst())
    }

    static func number(_ value: Double, to bytes: inout [UInt8]) {
        var json = JSONWriter(capacity: 24)
        json.double(value)
        bytes += json.bytes
    }

    static let formulaStarts: Set<Unicode.Scalar> = ["=", "+", "-", "@", "\t", "\r"]
    static let comma = UInt8(ascii: ",")
    static let quote = UInt8(ascii: "\"")
}
