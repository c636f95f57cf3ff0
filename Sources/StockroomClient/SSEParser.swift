import Foundation

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
        // The next CR at or after `index` (`bytes.count`: none): searched once for a chunk of LF
        // lines, as the server sends them, and lines end at the first LF before it.
        var nextCR = Self.find(cr, in: bytes, from: index, to: bytes.count)
        while index < bytes.count {
            if nextCR < index { nextCR = Self.find(cr, in: bytes, from: index, to: bytes.count) }
            index = Self.find(lf, in: bytes, from: index, to: nextCR)
            guard index < bytes.count else { break }
            let byte = bytes[index]
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

    /// Where `byte` first comes in `bytes[from..<to]`; `to` when it does not (`memchr`, which reads
    /// many bytes at a step).
    @inline(__always)
    private static func find(_ byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from: Int, to: Int) -> Int {
        guard from < to, let base = bytes.baseAddress, let found = memchr(base + from, Int32(byte), to - from) else { return to }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
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
