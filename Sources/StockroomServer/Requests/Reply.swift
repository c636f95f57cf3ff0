import HTTPTypes
import NIOFoundationCompat
import Foundation
import Hummingbird
import StockroomCore
import StockroomWire
import StockroomStorage

/// A complete response: what a handler returns and what an idempotency record replays.
struct Reply: Sendable {
    static let jsonContentType = "application/json; charset=utf-8"
    static let replayedHeader = HTTPField.Name("Idempotency-Replayed")!

    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: ByteBuffer

    /// A JSON reply written by `JSONWriter`: keys in declaration order, the same bytes every time.
    static func json(writing value: some JSONWritable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Reply {
        var json = JSONWriter()
        value.write(to: &json)
        return json.reply(status: status, headers: headers)
    }

    /// A reply with no body.
    static func empty(_ status: HTTPResponse.Status = .noContent, headers: HTTPFields = [:]) -> Reply {
        Reply(status: status, headers: headers, body: ByteBuffer())
    }

    /// The Hummingbird response.
    var response: Response {
        Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The reply as an idempotency record keeps it, bytes the store does not read:
    /// `<status>\n<headers as a JSON object>\n<body>` (migration 0006 rewrote older records into it).
    var stored: StoredResponse {
        var kept: [String: String] = [:]
        for field in headers { kept[field.name.canonicalName] = field.value }
        // The headers as one JSON object of strings, its keys sorted (`JSONWriter`, not
        // JSONEncoder: this runs for every keyed write).
        var json = JSONWriter(capacity: 64 + 48 * kept.count)
        json.raw("{")
        for (index, name) in kept.keys.sorted().enumerated() {
            if index > 0 { json.raw(",") }
            json.string(name)
            json.raw(":")
            json.string(kept[name]!)
        }
        json.raw("}")
        var bytes = Array("\(status.code)\n".utf8)
        bytes += json.bytes
        bytes.append(UInt8(ascii: "\n"))
        bytes += body.readableBytesView
        return StoredResponse(bytes: bytes)
    }

    /// A stored reply being replayed, marked as such; throws on bytes not of the stored form.
    init(replaying stored: StoredResponse) throws {
        let bytes = stored.bytes
        guard let first = bytes.firstIndex(of: UInt8(ascii: "\n")),
            let code = Int(String(decoding: bytes[..<first], as: UTF8.self)),
            let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: "\n")),
            let kept = try? JSONDecoder().decode([String: String].self, from: Data(bytes[(first + 1)..<second]))
        else { throw StoredReplyCorrupt() }
        var headers = HTTPFields()
        for (name, value) in kept.sorted(by: { $0.key < $1.key }) {
            if let name = Self.spelled[name] ?? HTTPField.Name(name) { headers[name] = value }
        }
        headers[Self.replayedHeader] = "true"
        self.init(status: HTTPResponse.Status(code: code), headers: headers, body: ByteBuffer(bytes: bytes[(second + 1)...]))
    }

    /// The names a stored reply's headers have (canonical: lowercase) mapped to the spelling the
    /// first answer gave them, so that a replay spells them alike.
    private static let spelled: [String: HTTPField.Name] = Dictionary(
        uniqueKeysWithValues: [HTTPField.Name.contentType, .eTag, .location, .retryAfter, .cacheControl, .contentDisposition].map {
            ($0.canonicalName, $0)
        })

    /// A stored answer that is not of `stored`'s form (answered as an internal error).
    struct StoredReplyCorrupt: Error {}

    init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The ETag of a version: `"3"`.
    static func etag(_ version: Int) -> String { "\"\(version)\"" }
}

extension JSONWriter {
    /// The JSON written so far as a reply.
    func reply(status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Reply {
        var headers = headers
        headers[.contentType] = Reply.jsonContentType
        return Reply(status: status, headers: headers, body: ByteBuffer(bytes: bytes))
    }
}
