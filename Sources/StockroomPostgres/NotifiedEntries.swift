import StockroomCore
import StockroomStorage

/// A head step's entries carried in its notification, so that the other daemons' listeners hand
/// them to their hubs without reading them back from `changes` (`PostgresStore.handle`).
///
/// The head step sends two notifications, in this order: `H <head> <sender>\n<entries>` when the
/// entries fit in PostgreSQL's payload, then `h <head>` always. A listener takes the entries of an
/// `H` that continue its hub's head; the `h` after it then finds the head there already. An `h`
/// alone (entries too large, or an `H` a listener could not use: its own daemon's, a gap before
/// it) brings the hub to the head by reading the table, as it did before `H` existed, and it is
/// all that a daemon older than `H` reads.
///
/// Each entry is its nine fields in order (entity, op, entity id, owner, value, previous, origin
/// client id, origin idempotency key, at), each either `-` (none) or `<bytes>:<text>`, with
/// `<bytes>` its UTF-8 length in decimal. Nothing separates fields or entries; the entries' seqs
/// are the ones before `head`, in order.
enum NotifiedEntries {
    /// The most bytes of entries an `H` carries: PostgreSQL refuses a payload of 8,000 bytes or
    /// more, and the prefix (`H`, the head, the sender) takes at most 40.
    static let budget = 7_900

    /// `entries` encoded, or nil when they take more than `budget` bytes (given up on at the first
    /// entry past it: a batch under load seldom fits).
    static func encode(_ entries: [PostgresWrite.Pending]) -> String? {
        var text = ""
        for entry in entries {
            append(entry.entity.rawValue, to: &text)
            append(entry.op.rawValue, to: &text)
            append(entry.id, to: &text)
            append(entry.owner?.rawValue, to: &text)
            append(entry.value, to: &text)
            append(entry.previous, to: &text)
            append(entry.origin.clientID?.rawValue, to: &text)
            append(entry.origin.idempotencyKey, to: &text)
            append(String(entry.at), to: &text)
            if text.utf8.count > budget { return nil }
        }
        return text
    }

    private static func append(_ field: String?, to text: inout String) {
        guard let field else {
            text += "-"
            return
        }
        text += String(field.utf8.count)
        text += ":"
        text += field
    }

    /// The entries `text` holds, numbered to end at `head`, for `epoch`; nil when `text` is not
    /// what `encode` writes.
    static func decode(_ text: Substring, head: Int64, epoch: String) -> [ChangeEntry]? {
        var reader = Reader(bytes: Array(text.utf8))
        var fields: [[String?]] = []
        while !reader.isAtEnd {
            var entry: [String?] = []
            entry.reserveCapacity(9)
            for _ in 0..<9 {
                guard let field = reader.field() else { return nil }
                entry.append(field)
            }
            fields.append(entry)
        }
        var seq = head - Int64(fields.count)
        var entries: [ChangeEntry] = []
        entries.reserveCapacity(fields.count)
        for field in fields {
            seq += 1
            guard let entityText = field[0], let entity = ChangeEntity(rawValue: entityText),
                let opText = field[1], let op = ChangeOp(rawValue: opText), let id = field[2],
                let atText = field[8], let at = Int64(atText)
            else { return nil }
            entries.append(
                ChangeEntry(
                    seq: seq, entity: entity, op: op, id: id, owner: field[3].map(UserID.init(stored:)), valueJSON: field[4],
                    before: ItemBefore(stored: field[5]), originClientID: field[6].map(ClientID.init(stored:)),
                    originIdempotencyKey: field[7], at: at, epoch: epoch))
        }
        return entries
    }

    /// Reads `encode`'s fields from the payload's bytes.
    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        var isAtEnd: Bool { index == bytes.count }

        /// The next field: `.some(nil)` for `-`, nil when the bytes are not a field.
        mutating func field() -> String?? {
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "-") {
                index += 1
                return .some(nil)
            }
            var length = 0
            var digits = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9"), digits < 6 {
                length = length * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                index += 1
                digits += 1
            }
            guard digits > 0, index < bytes.count, bytes[index] == UInt8(ascii: ":"), bytes.count - index - 1 >= length else { return nil }
            let start = index + 1
            index = start + length
            return .some(String(decoding: bytes[start..<index], as: UTF8.self))
        }
    }
}
