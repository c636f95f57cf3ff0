import Foundation
import StockroomCore

/// A forward-only reader over a JSON text that answers nil at the first byte it does not expect.
struct FastJSONScanner {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0
    /// A cursor epoch read before: a cursor of the same epoch shares its text rather than copying it.
    private let knownEpoch: String?
    /// The last time read, and its text: a change's times are often one (`createdAt`, `updatedAt`
    /// and `at` of a new item), and each is then parsed once.
    private var lastTimestamp: (text: UnsafeRawBufferPointer, date: Date)?

    init(_ bytes: UnsafeRawBufferPointer, knownEpoch: String? = nil) {
        self.bytes = bytes
        self.knownEpoch = knownEpoch
    }

    /// Only whitespace left.
    mutating func atEnd() -> Bool {
        skipSpace()
        return index == bytes.count
    }

    mutating func draft() -> Draft? {
        var name: String?
        var color: Color??
        var status: Status?
        let complete = object { key, scanner in
            switch key {
            case "name": return Self.fill(&name, scanner.string())
            case "color": return Self.fill(&color, scanner.literal("null") ? .some(nil) : scanner.color().map { .some($0) })
            case "status": return Self.fill(&status, scanner.status())
            default: return false
            }
        }
        guard complete, let name, let status else { return nil }
        // An absent colour reads as none, as `decodeNullable` decodes it.
        return Draft(name: name, color: color ?? nil, status: status)
    }

    mutating func commandRequest() -> Command? {
        single("command") { $0.command() }
    }

    private mutating func command() -> Command? {
        var command: Command?
        let complete = object { key, scanner in
            guard command == nil else { return false }
            switch key {
            case "openEdit", "openDuplicate", "openDeleteAlert":
                guard let id = scanner.single("itemID", { $0.string().flatMap(ItemID.init) }) else { return false }
                command = key == "openEdit" ? .openEdit(itemID: id) : key == "openDuplicate" ? .openDuplicate(itemID: id) : .openDeleteAlert(itemID: id)
                return true
            case "updateDraft":
                guard let draft = scanner.single("draft", { $0.draft() }) else { return false }
                command = .updateDraft(draft: draft)
                return true
            case "save", "cancel", "pop", "popToRoot", "openAdd", "confirmDelete":
                // Only `{}`: any member is left to JSONDecoder.
                guard scanner.object({ _, _ in false }) else { return false }
                command =
                    switch key {
                    case "save": .save()
                    case "cancel": .cancel
                    case "pop": .pop
                    case "popToRoot": .popToRoot
                    case "openAdd": .openAdd
                    default: .confirmDelete
                    }
                return true
            default:
                return false
            }
        }
        return complete ? command : nil
    }

    /// An item change as the feed sends it (`ChangeJSON`): `entity` "item", `value` an item or null.
    /// Nil for any other entity, and for anything `change()`'s members do not read.
    mutating func itemChange() -> Change? {
        let start = index
        if let change = serverItemChange() { return change }
        index = start
        var seq: Int?
        var cursor: FeedCursor?
        var entity: ChangeEntity?
        var operation: ChangeOp?
        var move: ChangeMove??
        var id: String?
        var value: Item??
        var origin: Change.Origin?
        var at: Date?
        let complete = object { key, scanner in
            switch key {
            case "seq": return Self.fill(&seq, scanner.integer())
            case "cursor": return Self.fill(&cursor, scanner.cursor())
            // Matched on the bytes: a value with an escape in it is left to JSONDecoder.
            case "entity": return Self.fill(&entity, scanner.asciiString().flatMap { Key(bytes: $0) == "item" ? ChangeEntity.item : nil })
            case "op": return Self.fill(&operation, scanner.asciiString().flatMap(Self.operation))
            case "move": return Self.fill(&move, scanner.literal("null") ? .some(nil) : scanner.asciiString().flatMap(Self.move).map { .some($0) })
            case "id": return Self.fill(&id, scanner.string())
            case "value": return Self.fill(&value, scanner.literal("null") ? .some(nil) : scanner.item().map { .some($0) })
            case "origin": return Self.fill(&origin, scanner.origin())
            case "at": return Self.fill(&at, scanner.timestamp())
            default: return false
            }
        }
        guard complete, let seq, let cursor, entity == .item, let operation, let id, let origin, let at else { return nil }
        return Change(seq: seq, cursor: cursor, entity: .item, operation: operation, move: move ?? nil, id: id, value: (value ?? nil).map(Change.Value.item), origin: origin, at: at)
    }

    /// An item change in the server's own layout (`ChangeJSON.write`: its members in its order,
    /// no whitespace), each key matched with the punctuation around it rather than read and looked
    /// up; nil at the first byte that differs, and `itemChange` reads the text again member by
    /// member. Every value is read as there, so what this takes decodes the same.
    private mutating func serverItemChange() -> Change? {
        guard takeText(#"{"seq":"#), let seq = integer(), takeText(#","cursor":"#), let cursor = cursor(),
            takeText(#","entity":"item","op":"#), let operation = asciiString().flatMap(Self.operation)
        else { return nil }
        var move: ChangeMove?
        if takeText(#","move":"#) {
            guard let moved = asciiString().flatMap(Self.move) else { return nil }
            move = moved
        }
        guard takeText(#","id":"#), let id = string(), takeText(#","value":"#) else { return nil }
        var item: Item?
        if !literal("null") {
            guard let value = serverItem() else { return nil }
            item = value
        }
        guard takeText(#","origin":"#), let origin = origin(), takeText(#","at":"#), let at = timestamp(), take(UInt8(ascii: "}")) else { return nil }
        return Change(seq: seq, cursor: cursor, entity: .item, operation: operation, move: move, id: id, value: item.map(Change.Value.item), origin: origin, at: at)
    }

    /// An item in the server's own layout (`ItemJSON.write`), as `serverItemChange` reads a change.
    private mutating func serverItem() -> Item? {
        guard takeText(#"{"id":"#), let id = asciiString().flatMap({ ItemID(utf8: $0) }), takeText(#","name":"#), let name = string(),
            takeText(#","color":"#)
        else { return nil }
        var color: Color?
        if !literal("null") {
            guard let value = serverColor() else { return nil }
            color = value
        }
        guard takeText(#","status":"#), let status = serverStatus(), takeText(#","version":"#), let version = integer(),
            takeText(#","createdAt":"#), let createdAt = timestamp(), takeText(#","updatedAt":"#), let updatedAt = timestamp(),
            take(UInt8(ascii: "}"))
        else { return nil }
        return Item(id: id, name: name, color: color, status: status, version: version, createdAt: createdAt, updatedAt: updatedAt)
    }

    /// A colour in the server's own layout (`ColorJSON.write`), or as `color()` reads it.
    private mutating func serverColor() -> Color? {
        let start = index
        if takeText(#"{"name":"#), let name = string(), takeText(#","red":"#), let red = double(), takeText(#","green":"#),
            let green = double(), takeText(#","blue":"#), let blue = double(), take(UInt8(ascii: "}"))
        {
            return Color(name: name, red: red, green: green, blue: blue)
        }
        index = start
        return color()
    }

    /// A status in the server's own layout (`Status.write`), or as `status()` reads it.
    private mutating func serverStatus() -> Status? {
        let start = index
        if takeText(#"{"inStock":{"quantity":"#), let quantity = integer(), takeText("}}") { return .inStock(quantity: quantity) }
        index = start
        if takeText(#"{"outOfStock":{"isOnBackOrder":"#), let isOnBackOrder = bool(), takeText("}}") {
            return .outOfStock(isOnBackOrder: isOnBackOrder)
        }
        index = start
        return status()
    }

    private static func operation(_ text: UnsafeRawBufferPointer) -> ChangeOp? {
        let key = Key(bytes: text)
        return key == "upsert" ? .upsert : key == "delete" ? .delete : nil
    }

    private static func move(_ text: UnsafeRawBufferPointer) -> ChangeMove? {
        let key = Key(bytes: text)
        return key == "in" ? .in : key == "out" ? .out : nil
    }

    private mutating func item() -> Item? {
        var id: ItemID?
        var name: String?
        var color: Color??
        var status: Status?
        var version: Int?
        var createdAt: Date?
        var updatedAt: Date?
        let complete = object { key, scanner in
            switch key {
            case "id": return Self.fill(&id, scanner.asciiString().flatMap { ItemID(utf8: $0) })
            case "name": return Self.fill(&name, scanner.string())
            case "color": return Self.fill(&color, scanner.literal("null") ? .some(nil) : scanner.color().map { .some($0) })
            case "status": return Self.fill(&status, scanner.status())
            case "version": return Self.fill(&version, scanner.integer())
            case "createdAt": return Self.fill(&createdAt, scanner.timestamp())
            case "updatedAt": return Self.fill(&updatedAt, scanner.timestamp())
            default: return false
            }
        }
        guard complete, let id, let name, let status, let version, let createdAt, let updatedAt else { return nil }
        return Item(id: id, name: name, color: color ?? nil, status: status, version: version, createdAt: createdAt, updatedAt: updatedAt)
    }

    /// `{"clientID": "…" | null, "idempotencyKey": "…" | null}`, either member absent read as null.
    private mutating func origin() -> Change.Origin? {
        // What most changes carry (a write without a device or a key), matched whole.
        if takeText(Self.anonymousOrigin) { return Change.Origin(clientID: nil, idempotencyKey: nil) }
        var clientID: ClientID??
        var key: String??
        let complete = object { name, scanner in
            switch name {
            case "clientID": return Self.fill(&clientID, scanner.literal("null") ? .some(nil) : scanner.string().flatMap(ClientID.init).map { .some($0) })
            case "idempotencyKey": return Self.fill(&key, scanner.literal("null") ? .some(nil) : scanner.string().map { .some($0) })
            default: return false
            }
        }
        return complete ? Change.Origin(clientID: clientID ?? nil, idempotencyKey: key ?? nil) : nil
    }

    /// An RFC 3339 time as the contract writes it (`Timestamp.parse`).
    private mutating func timestamp() -> Date? {
        // The text of the last time again, between quotes: the same time, without a second scan
        // (that text was read as plain ASCII once).
        if let last = lastTimestamp {
            skipSpace()
            let end = index + 1 + last.text.count
            if end < bytes.count, bytes[index] == UInt8(ascii: "\""), bytes[end] == UInt8(ascii: "\""),
                memcmp(last.text.baseAddress!, bytes.baseAddress! + index + 1, last.text.count) == 0
            {
                index = end + 1
                return last.date
            }
        }
        guard let text = asciiString(), !text.isEmpty else { return nil }
        guard let date = Timestamp.parse(utf8: text) else { return nil }
        lastTimestamp = (text, date)
        return date
    }

    /// A cursor as the server writes it, `c1.<hex epoch>.<seq>` (`FeedCursor(encoded:)`), read from
    /// the bytes; nil for any other text (a sign, non-ASCII digits), which `FeedCursor(encoded:)`
    /// then reads after `JSONDecoder`.
    private mutating func cursor() -> FeedCursor? {
        guard let bytes = asciiString(), bytes.count >= 6, bytes[0] == UInt8(ascii: "c"), bytes[1] == UInt8(ascii: "1"),
            bytes[2] == UInt8(ascii: ".")
        else { return nil }
        var index = 3
        // The epoch known before was read here: its text needs no second look, and a cursor whose
        // epoch is exactly that text shares it.
        let knownLength = knownEpoch.flatMap { Self.startsWith($0, UnsafeRawBufferPointer(rebasing: bytes[3...])) ? $0.utf8.count : nil }
        index += knownLength ?? 0
        while index < bytes.count, bytes[index].isASCIIHexDigit { index += 1 }
        let epochEnd = index
        guard epochEnd > 3, index < bytes.count, bytes[index] == UInt8(ascii: "."), index + 1 < bytes.count else { return nil }
        index += 1
        var seq: Int64 = 0
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflowTimes) = seq.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(Int64(digit))
            guard !overflowTimes, !overflowSum else { return nil }
            seq = sum
            index += 1
        }
        if let knownEpoch, epochEnd - 3 == knownLength { return FeedCursor(epoch: knownEpoch, seq: seq) }
        return FeedCursor(epoch: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[3..<epochEnd]), as: UTF8.self), seq: seq)
    }

    /// Whether `bytes` start with `text`'s UTF-8.
    private static func startsWith(_ text: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let start = bytes.baseAddress, text.utf8.count <= bytes.count else { return false }
        return text.utf8.withContiguousStorageIfAvailable { $0.isEmpty || memcmp($0.baseAddress!, start, $0.count) == 0 } ?? false
    }

    /// A string of ASCII without escapes or control characters, as its bytes.
    private mutating func asciiString() -> UnsafeRawBufferPointer? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        skipPlainText(nonASCIIEnds: true)
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return UnsafeRawBufferPointer(rebasing: bytes[start..<(index - 1)])
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    private mutating func color() -> Color? {
        var name: String?
        var red: Double?
        var green: Double?
        var blue: Double?
        let complete = object { key, scanner in
            switch key {
            case "name": return Self.fill(&name, scanner.string())
            case "red": return Self.fill(&red, scanner.double())
            case "green": return Self.fill(&green, scanner.double())
            case "blue": return Self.fill(&blue, scanner.double())
            default: return false
            }
        }
        guard complete, let name, let red, let green, let blue else { return nil }
        return Color(name: name, red: red, green: green, blue: blue)
    }

    private mutating func status() -> Status? {
        var status: Status?
        let complete = object { key, scanner in
            guard status == nil else { return false }
            switch key {
            case "inStock":
                guard let quantity = scanner.single("quantity", { $0.integer() }) else { return false }
                status = .inStock(quantity: quantity)
            case "outOfStock":
                guard let isOnBackOrder = scanner.single("isOnBackOrder", { $0.bool() }) else { return false }
                status = .outOfStock(isOnBackOrder: isOnBackOrder)
            default:
                return false
            }
            return true
        }
        return complete ? status : nil
    }

    /// Sets a member's `slot` to the `value` read; false for a repeated key or a value that did not read.
    private static func fill<Value>(_ slot: inout Value?, _ value: Value?) -> Bool {
        guard slot == nil, let value else { return false }
        slot = value
        return true
    }

    /// `{"<name>": value}`: that one member, read by `value`; nil for anything else.
    private mutating func single<Value>(_ name: StaticString, _ value: (inout FastJSONScanner) -> Value?) -> Value? {
        var result: Value?
        let complete = object { key, scanner in
            guard key == name, result == nil else { return false }
            result = value(&scanner)
            return result != nil
        }
        return complete ? result : nil
    }

    private mutating func bool() -> Bool? {
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// `{ "key": value, … }`, each value read by `member` (false: give up). An empty object is fine.
    private mutating func object(_ member: (Key, inout FastJSONScanner) -> Bool) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        if take(UInt8(ascii: "}")) { return true }
        while true {
            guard let key = key(), take(UInt8(ascii: ":")) else { return false }
            skipSpace()
            guard member(key, &self) else { return false }
            if take(UInt8(ascii: ",")) { continue }
            return take(UInt8(ascii: "}"))
        }
    }

    /// A member's key: the bytes up to the next quote, unchecked. Every name a reader knows is
    /// ASCII letters, so a key with an escape, a control or a non-ASCII byte in it matches none,
    /// and the reader gives up: the text is left to JSONDecoder with the rest.
    private mutating func key() -> Key? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        // Eight bytes at a time (most keys end within the first word), then the few left one by one.
        while index + 8 <= bytes.count {
            let quotes = ByteWords.bytes(of: ByteWords.word(bytes, at: index), equalTo: UInt8(ascii: "\""))
            guard quotes == 0 else {
                index += quotes.trailingZeroBitCount / 8
                break
            }
            index += 8
        }
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") { index += 1 }
        guard index < bytes.count else { return nil }
        index += 1
        return Key(bytes: UnsafeRawBufferPointer(rebasing: bytes[start..<(index - 1)]))
    }

    /// A string without escapes or control characters, in valid UTF-8.
    private mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        var bits: UInt8 = skipPlainText(nonASCIIEnds: false) ? 0x80 : 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let utf8 = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                // ASCII (every key, most names) needs no validation, so only other text pays for
                // `String(validating:)`.
                let text = bits < 0x80 ? String(decoding: utf8, as: UTF8.self) : String(validating: utf8, as: UTF8.self)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            bits |= byte
            index += 1
        }
        return nil
    }

    /// Moves over the bytes of a string's text eight at a time, up to the first that needs a look
    /// of its own: a quote, a backslash, a control character, and with `nonASCIIEnds` any byte
    /// from 0x80. Fewer than eight left are left to the caller. True when a byte moved over was 0x80 or above.
    @discardableResult
    private mutating func skipPlainText(nonASCIIEnds: Bool) -> Bool {
        var high: UInt64 = 0
        while index + 8 <= bytes.count {
            let word = ByteWords.word(bytes, at: index)
            var ends = ByteWords.bytes(of: word, equalTo: UInt8(ascii: "\"")) | ByteWords.bytes(of: word, equalTo: UInt8(ascii: "\\"))
                | ByteWords.bytes(of: word, below: 0x20)
            if nonASCIIEnds { ends |= word & ByteWords.highBits }
            guard ends == 0 else {
                let offset = ends.trailingZeroBitCount / 8
                high |= word & ByteWords.highBits & ((1 << (UInt64(offset) * 8)) &- 1)
                index += offset
                return high != 0
            }
            high |= word & ByteWords.highBits
            index += 8
        }
        return high != 0
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?`: no exponent.
    private mutating func double() -> Double? {
        skipSpace()
        let start = index
        let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var digits: UInt64 = 0
        let whole = index
        takeDigits(into: &digits)
        guard index > whole, index - whole == 1 || bytes[whole] != UInt8(ascii: "0") else { return nil }
        var count = index - whole
        var scale = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let fraction = index
            takeDigits(into: &digits)
            scale = index - fraction
            guard scale > 0 else { return nil }
            count += scale
        }
        // What follows a number must end it: `1e5`, `1.` or `01` are not taken.
        guard endsValue(at: index) else { return nil }
        // At most 15 digits (so at most 15 after the point): the digits and the power of ten are
        // both exact doubles, and one division rounds as the whole text would (Clinger's fast path).
        guard count <= 15 else { return Double(Substring(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)) }
        let magnitude = Double(digits) / Self.powersOfTen[scale]
        return negative ? -magnitude : magnitude
    }

    /// Moves over a run of ASCII digits, adding each to `digits` (which wraps past 19 of them:
    /// `double()` then reads the text with `strtod`).
    private mutating func takeDigits(into digits: inout UInt64) {
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return }
            digits = digits &* 10 &+ UInt64(digit)
            index += 1
        }
    }

    /// 1e0 through 1e15, each exact.
    private static let powersOfTen: [Double] = (0...15).map { exponent in (0..<exponent).reduce(1.0) { power, _ in power * 10 } }

    /// `0|-?[1-9][0-9]*` within `Int`.
    private mutating func integer() -> Int? {
        skipSpace()
        let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let first = index
        // Summed negative, so that `Int.min` fits.
        var value = 0
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.subtractingReportingOverflow(Int(digit))
            guard !overflowTimes, !overflowSum else { return nil }
            value = sum
            index += 1
        }
        let count = index - first
        guard count > 0, count == 1 || bytes[first] != UInt8(ascii: "0"), endsValue(at: index) else { return nil }
        if negative { return value == 0 ? nil : value }  // `-0` is left to JSONDecoder
        return value == .min ? nil : -value
    }

    /// The origin of a change no device and no idempotency key made, as the server writes it.
    private static let anonymousOrigin: StaticString = #"{"clientID":null,"idempotencyKey":null}"#

    /// The exact bytes of `text` (after whitespace), taken if they come next.
    private mutating func takeText(_ text: StaticString) -> Bool {
        skipSpace()
        guard comesNext(text) else { return false }
        index += text.utf8CodeUnitCount
        return true
    }

    /// The exact bytes of `word` (`null`, `true`, `false`), ending there.
    private mutating func literal(_ word: StaticString) -> Bool {
        skipSpace()
        guard comesNext(word), endsValue(at: index + word.utf8CodeUnitCount) else { return false }
        index += word.utf8CodeUnitCount
        return true
    }

    /// Whether the bytes from `index` on start with `text`'s.
    private func comesNext(_ text: StaticString) -> Bool {
        let length = text.utf8CodeUnitCount
        return index + length <= bytes.count && memcmp(text.utf8Start, bytes.baseAddress! + index, length) == 0
    }

    /// Whether a number or a literal may end before `position`: the text's end, a comma, a closing
    /// brace or whitespace comes there.
    private func endsValue(at position: Int) -> Bool {
        guard position < bytes.count else { return true }
        switch bytes[position] {
        case UInt8(ascii: ","), UInt8(ascii: "}"), 0x20, 0x09, 0x0A, 0x0D: return true
        default: return false
        }
    }

    /// Skips whitespace, then takes `byte` if it comes next.
    private mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }
}

extension UInt8 {
    /// 0-9, a-f, A-F.
    var isASCIIHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}

/// A member's key: its bytes in the text, matched against the names a reader knows without
/// making a `String` of it.
private struct Key {
    let bytes: UnsafeRawBufferPointer

    static func == (key: Key, name: StaticString) -> Bool {
        let count = name.utf8CodeUnitCount
        guard key.bytes.count == count else { return false }
        for index in 0..<count where key.bytes[index] != name.utf8Start[index] { return false }
        return true
    }

    static func ~= (name: StaticString, key: Key) -> Bool { key == name }
}
