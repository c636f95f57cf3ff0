/// Splits a Server-Sent Events byte stream into events, as the WHATWG rules read it: lines end in
/// LF, CRLF or CR; a blank line ends an event; `:` starts a comment; `data` lines join with LF.
///
/// It reads a chunk in place: a line that ends inside the chunk is taken from it without a copy,
/// only a line split across chunks is gathered in `line`, and an event's data is gathered in a
/// buffer it reuses, handed over as bytes (`feed(_:_:)`) without a `String` made of it.
struct SSEParser: Sendable {
    /// One dispatched event, or a comment line.
    enum Output: Equatable, Sendable {
        case event(id: String?, name: String, data: String)
        case comment(String)
    }

    /// One dispatched event, valid during the call it is handed to: its name (`message` when it
    /// has none), and its `id` and `data` as bytes.
    struct Event {
        var name: String
        var id: UnsafeRawBufferPointer?
        var data: UnsafeRawBufferPointer
    }

    /// The start of a line the last chunk did not end.
    private var line: [UInt8] = []
    private var lastWasCR = false
    private var id: [UInt8] = []
    private var hasID = false
    private var name: String?
    private var data: [UInt8] = []
    private var hasData = false

    /// Feeds bytes; returns what they complete.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [Output] {
        var outputs: [Output] = []
        feed(bytes) { event in
            outputs.append(
                .event(
                    id: event.id.map { String(decoding: $0, as: UTF8.self) }, name: event.name, data: String(decoding: event.data, as: UTF8.self)))
        } comment: { text in
            outputs.append(.comment(text))
        }
        return outputs
    }

    /// Feeds bytes; hands each event they complete to `event`, and each comment to `comment`.
    mutating func feed(
        _ bytes: some Sequence<UInt8>, _ event: (Event) throws -> Void, comment: (String) -> Void = { _ in }
    ) rethrows {
        let contiguous: Void? = try bytes.withContiguousStorageIfAvailable { try feed($0, event, comment) }
        if contiguous == nil {
            try Array(bytes).withUnsafeBufferPointer { try feed($0, event, comment) }
        }
    }

    private mutating func feed(
        _ bytes: UnsafeBufferPointer<UInt8>, _ event: (Event) throws -> Void, _ comment: (String) -> Void
    ) rethrows {
        let lf = UInt8(ascii: "\n")
        let cr = UInt8(ascii: "\r")
        var index = 0
        if lastWasCR, !bytes.isEmpty {
            lastWasCR = false
            if bytes[0] == lf { index = 1 }
        }
        var start = index
        let raw = UnsafeRawBufferPointer(bytes)
        while index < bytes.count {
            // Eight bytes at a time up to the next line's end.
            while index + 8 <= bytes.count {
                let ends = Self.lineEnds(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
                guard ends == 0 else {
                    index += ends.trailingZeroBitCount / 8
                    break
                }
                index += 8
            }
            guard index < bytes.count else { break }
            let byte = bytes[index]
            guard byte == lf || byte == cr else {
                index += 1
                continue
            }
            let rest = UnsafeBufferPointer(rebasing: bytes[start..<index])
            if line.isEmpty {
                try endLine(rest, event, comment)
            } else {
                line.append(contentsOf: rest)
                let whole = line
                line.removeAll(keepingCapacity: true)
                try whole.withUnsafeBufferPointer { try endLine($0, event, comment) }
            }
            index += 1
            if byte == cr {
                if index < bytes.count {
                    if bytes[index] == lf { index += 1 }
                } else {
                    lastWasCR = true
                }
            }
            start = index
        }
        line.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
    }

    private mutating func endLine(
        _ line: UnsafeBufferPointer<UInt8>, _ event: (Event) throws -> Void, _ comment: (String) -> Void
    ) rethrows {
        guard let first = line.first else {
            defer {
                name = nil
                id.removeAll(keepingCapacity: true)
                hasID = false
                data.removeAll(keepingCapacity: true)
                hasData = false
            }
            guard hasData else { return }
            let name = self.name ?? "message"
            let hasID = self.hasID
            try data.withUnsafeBytes { data in
                try id.withUnsafeBytes { id in try event(Event(name: name, id: hasID ? id : nil, data: data)) }
            }
            return
        }
        if first == UInt8(ascii: ":") {
            comment(String(decoding: Self.value(UnsafeBufferPointer(rebasing: line[1...])), as: UTF8.self))
            return
        }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let field = UnsafeBufferPointer(rebasing: line[..<colon])
        let value = Self.value(colon < line.endIndex ? UnsafeBufferPointer(rebasing: line[(colon + 1)...]) : UnsafeBufferPointer(rebasing: line[colon...]))
        if Self.isField(field, "data") {
            if hasData { data.append(UInt8(ascii: "\n")) }
            data.append(contentsOf: value)
            hasData = true
        } else if Self.isField(field, "id") {
            id.removeAll(keepingCapacity: true)
            id.append(contentsOf: value)
            hasID = true
        } else if Self.isField(field, "event") {
            name = String(decoding: value, as: UTF8.self)
        }
    }

    /// The high bit of each byte of `word` that is LF or CR, exact up to the first such byte (the
    /// lowest: `word` is read little-endian).
    @inline(__always)
    private static func lineEnds(_ word: UInt64) -> UInt64 {
        let lf = word ^ 0x0A0A_0A0A_0A0A_0A0A
        let cr = word ^ 0x0D0D_0D0D_0D0D_0D0D
        return ((lf &- 0x0101_0101_0101_0101) & ~lf | (cr &- 0x0101_0101_0101_0101) & ~cr) & 0x8080_8080_8080_8080
    }

    /// Whether `field` is `name`, byte for byte.
    private static func isField(_ field: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        guard field.count == name.utf8CodeUnitCount else { return false }
        for index in 0..<field.count where field[index] != name.utf8Start[index] { return false }
        return true
    }

    /// A field's value: the bytes after its colon, without one leading space.
    private static func value(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        bytes.first == UInt8(ascii: " ") ? UnsafeBufferPointer(rebasing: bytes[1...]) : bytes
    }
}
