import StockroomCore

/// Items as CSV rows (RFC 4180, CRLF line ends, UTF-8), the export's and the import's columns:
/// `name, status, quantity, onBackOrder, colorName, colorRed, colorGreen, colorBlue, id, version,
/// createdAt, updatedAt`. A field is quoted when it holds a comma, a quote, a CR or an LF, or starts
/// or ends with a space; a quote inside is doubled. A text cell a spreadsheet would take for a
/// formula (it begins with `=`, `+`, `-`, `@`, a tab or a CR, or with `'`s before one of them) is
/// written with a leading `'`, which the import removes again (`unguarded`), so that an export
/// imports back unchanged.
public enum ItemCSV {
    /// The columns, in the order the export writes them.
    public static let columns = [
        "name", "status", "quantity", "onBackOrder", "colorName", "colorRed", "colorGreen", "colorBlue", "id", "version", "createdAt",
        "updatedAt",
    ]

    /// The header row.
    public static var header: [UInt8] { Array((columns.joined(separator: ",") + "\r\n").utf8) }

    /// Appends `item`'s row.
    public static func write(_ item: Item, to json: inout JSONWriter) {
        text(item.name, to: &json)
        switch item.status {
        case .inStock(let quantity):
            json.raw(",inStock,")
            json.int(quantity)
            json.raw(",,")
        case .outOfStock(let isOnBackOrder):
            json.raw(isOnBackOrder ? ",outOfStock,,true," : ",outOfStock,,false,")
        }
        if let color = item.color {
            text(color.name, to: &json)
            json.raw(",")
            json.double(color.red)
            json.raw(",")
            json.double(color.green)
            json.raw(",")
            json.double(color.blue)
        } else {
            json.raw(",,,")
        }
        json.raw(",")
        json.itemIDUnquoted(item.id)
        json.raw(",")
        json.int(item.version)
        json.raw(",")
        json.timestamp(milliseconds: Timestamp.milliseconds(item.createdAt), quoted: false)
        json.raw(",")
        json.timestamp(milliseconds: Timestamp.milliseconds(item.updatedAt), quoted: false)
        json.raw("\r\n")
    }

    /// A text cell: guarded against formulas, quoted when it must be.
    static func text(_ value: String, to json: inout JSONWriter) {
        let value = guardedAgainstFormula(value)
        var needsQuotes = value.utf8.first == space || value.utf8.last == space
        if !needsQuotes {
            for byte in value.utf8 where byte == comma || byte == quote || byte == cr || byte == lf {
                needsQuotes = true
                break
            }
        }
        guard needsQuotes else {
            json.raw(json: value.utf8)
            return
        }
        var quoted: [UInt8] = [quote]
        for byte in value.utf8 {
            if byte == quote { quoted.append(quote) }
            quoted.append(byte)
        }
        quoted.append(quote)
        json.raw(json: quoted)
    }

    /// `value` with a leading `'` when a spreadsheet would read it as a formula, and when it begins
    /// with `'`s before a formula's first character (`'=1` is written `''=1`), so that `unguarded`,
    /// which removes one `'` from such a cell, gives every value back as it was.
    public static func guardedAgainstFormula(_ value: String) -> String {
        guard startsFormula(afterQuotes: value.unicodeScalars) else { return value }
        return "'" + value
    }

    /// A cell as the import reads it: one leading `'` removed when `'`s and then a formula's first
    /// character begin it.
    public static func unguarded(_ cell: String) -> String {
        let scalars = cell.unicodeScalars
        guard scalars.first == "'", startsFormula(afterQuotes: scalars.dropFirst()) else { return cell }
        return String(scalars.dropFirst())
    }

    /// Whether `scalars`, past any `'`s they begin with, begin with a formula's first character.
    static func startsFormula(afterQuotes scalars: some Collection<Unicode.Scalar>) -> Bool {
        guard let first = scalars.first(where: { $0 != "'" }) else { return false }
        return formulaStarts.contains(first)
    }

    static let formulaStarts: Set<Unicode.Scalar> = ["=", "+", "-", "@", "\t", "\r"]
    static let comma = UInt8(ascii: ",")
    static let quote = UInt8(ascii: "\"")
    static let space = UInt8(ascii: " ")
    static let cr = UInt8(ascii: "\r")
    static let lf = UInt8(ascii: "\n")
}
