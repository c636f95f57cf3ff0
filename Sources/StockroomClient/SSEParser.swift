/// Splits a Server-Sent Events byte stream into events, as the WHATWG rules read it: lines end in
/// LF, CRLF or CR; a blank line ends an event; `:` starts a comment; `data` lines join with LF.
///
/// It reads a chunk in place: a line that ends inside the chunk is taken from it without a copy,
/// and only a line split across chunks is gathered in `line`.
struct SSEParser: Sendable {
    /// One dispatched event, or a comment line.
    enum Output: Equatable, Sendable {
        case event(id: String?, name: String, data: String)
        case comment(String)
    }

    /// The start of a line the last chunk did not end.
    private var line: [UInt8] = []
    private var lastWasCR = false
    private var id: String?
    private var name: String?
    private var data: String?

    /// Feeds bytes; returns what they complete.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [Output] {
        var outputs: [Output] = []
        let contiguous = bytes.withContiguousStorageIfAvailable { feed($0, into: &outputs) }
        if contiguous == nil {
            Array(bytes).withUnsafeBufferPointer { feed($0, into: &outputs) }
        }
        return outputs
    }

    private mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>, into outputs: inout [Output]) {
        let lf = UInt8(ascii: "\n")
        let cr = UInt8(ascii: "\r")
        var index = 0
        if lastWasCR, !bytes.isEmpty {
            lastWasCR = false
            if bytes[0] == lf { index = 1 }
        }
        var start = index
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == lf || byte == cr else {
                index += 1
                continue
            }
            let rest = UnsafeBufferPointer(rebasing: bytes[start..<index])
            if line.isEmpty {
                endLine(rest, into: &outputs)
            } else {
                line.append(contentsOf: rest)
                let whole = line
                line.removeAll(keepingCapacity: true)
                whole.withUnsafeBufferPointer { endLine($0, into: &outputs) }
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

    private mutating func endLine(_ line: UnsafeBufferPointer<UInt8>, into outputs: inout [Output]) {
        guard let first = line.first else {
            if let data {
                outputs.append(.event(id: id, name: name ?? "message", data: data))
            }
            name = nil
            data = nil
            id = nil
            return
        }
        if first == UInt8(ascii: ":") {
            outputs.append(.comment(Self.text(UnsafeBufferPointer(rebasing: line[1...]), droppingOneSpace: true)))
            return
        }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let field = UnsafeBufferPointer(rebasing: line[..<colon])
        let value = colon < line.endIndex ? UnsafeBufferPointer(rebasing: line[(colon + 1)...]) : UnsafeBufferPointer(rebasing: line[colon...])
        if field.elementsEqual("data".utf8) {
            let text = Self.text(value, droppingOneSpace: true)
            data = data.map { $0 + "\n" + text } ?? text
        } else if field.elementsEqual("id".utf8) {
            id = Self.text(value, droppingOneSpace: true)
        } else if field.elementsEqual("event".utf8) {
            name = Self.text(value, droppingOneSpace: true)
        }
    }

    /// The bytes as text, without one leading space when asked.
    private static func text(_ bytes: UnsafeBufferPointer<UInt8>, droppingOneSpace: Bool) -> String {
        if droppingOneSpace, bytes.first == UInt8(ascii: " ") {
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[1...]), as: UTF8.self)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
