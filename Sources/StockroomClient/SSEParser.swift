/// Splits a Server-Sent Events byte stream into events, as the WHATWG rules read it: lines end in
/// LF, CRLF or CR; a blank line ends an event; `:` starts a comment; `data` lines join with LF.
struct SSEParser: Sendable {
    /// One dispatched event, or a comment line.
    enum Output: Equatable, Sendable {
        case event(id: String?, name: String, data: String)
        case comment(String)
    }

    private var line: [UInt8] = []
    private var lastWasCR = false
    private var id: String?
    private var name: String?
    private var data: String?

    /// Feeds bytes; returns what they complete.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [Output] {
        var outputs: [Output] = []
        for byte in bytes {
            if lastWasCR {
                lastWasCR = false
                if byte == UInt8(ascii: "\n") { continue }
            }
            switch byte {
            case UInt8(ascii: "\n"):
                endLine(into: &outputs)
            case UInt8(ascii: "\r"):
                lastWasCR = true
                endLine(into: &outputs)
            default:
                line.append(byte)
            }
        }
        return outputs
    }

    private mutating func endLine(into outputs: inout [Output]) {
        defer { line.removeAll(keepingCapacity: true) }
        guard !line.isEmpty else {
            if let data {
                outputs.append(.event(id: id, name: name ?? "message", data: data))
            }
            name = nil
            data = nil
            id = nil
            return
        }
        if line.first == UInt8(ascii: ":") {
            outputs.append(.comment(String(decoding: line.dropFirst(), as: UTF8.self).trimmingLeadingSpace()))
            return
        }
        let field: String
        var value: String
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = String(decoding: line[..<colon], as: UTF8.self)
            value = String(decoding: line[(colon + 1)...], as: UTF8.self)
            if value.hasPrefix(" ") { value.removeFirst() }
        } else {
            field = String(decoding: line, as: UTF8.self)
            value = ""
        }
        switch field {
        case "id": id = value
        case "event": name = value
        case "data": data = data.map { $0 + "\n" + value } ?? value
        default: break
        }
    }
}

extension String {
    fileprivate func trimmingLeadingSpace() -> String {
        hasPrefix(" ") ? String(dropFirst()) : self
    }
}
