import HTTPTypes
import NIOFoundationCompat
import Crypto
import Foundation
import Hummingbird
import StockroomCore
import StockroomWire
import StockroomStorage

/// A decoded JSON body and the bytes it came from.
struct JSONBody<Value: Decodable> {
    var value: Value
    var bytes: Data
}

extension Request {
    /// Decodes a JSON body of at most 1 MiB: `415` for a non-JSON content type, `413` when too large,
    /// `400 invalidJSON` when it is not JSON or not of the expected shape.
    func decodeJSON<Value: Decodable>(_ type: Value.Type, context: some ConnectionContext) async throws -> JSONBody<Value> {
        try Self.decoded(Value.self, from: try await jsonBytes(context: context))
    }

    /// `decodeJSON` for a type with a reader of its common shape (`FastJSONDecodable`): that reader
    /// first, and `JSONDecoder` for whatever it does not take.
    func decodeJSON<Value: FastJSONDecodable>(_ type: Value.Type, context: some ConnectionContext) async throws -> JSONBody<Value> {
        let bytes = try await jsonBytes(context: context)
        if let value = bytes.withUnsafeBytes({ Value(fastJSON: $0) }) { return JSONBody(value: value, bytes: bytes) }
        return try Self.decoded(Value.self, from: bytes)
    }

    /// The bytes of a JSON body of at most 1 MiB: `415` for a non-JSON content type or a content
    /// coding, `413` when too large.
    private func jsonBytes(context: some ConnectionContext) async throws -> Data {
        if let contentType = headers.value(of: .contentType), !Self.namesJSON(contentType) {
            throw APIError(.unsupportedMediaType, "request bodies must be application/json")
        }
        try refuseContentCoding()
        // A declared length over the limit is answered at once, not after reading up to the limit
        // (or, for a body that never comes, never).
        if let declared = headers.value(of: .contentLength).flatMap({ Int($0) }), declared > context.maxUploadSize {
            throw APIError(.payloadTooLarge, "request body is larger than 1 MiB")
        }
        continueIfAsked(context)
        var request = self
        return Data(buffer: try await request.collectBody(upTo: context.maxUploadSize))
    }

    /// Called once the request's head has passed every check, before its body is read: a client
    /// that asked (`Expect: 100-continue`) is told to send it now (`MalformedRequestGuard`). A
    /// request refused before this gets its final answer instead, and its client sends no body.
    func continueIfAsked(_ context: some ConnectionContext) {
        guard headers.contains(.expect) else { return }
        context.channel.triggerUserOutboundEvent(ContinueEvent(), promise: nil)
    }

    /// `415` for a body in a content coding (a `Content-Encoding` other than `identity`), with
    /// `Accept-Encoding: identity` (RFC 9110 §15.5.16): bodies are read as they are sent, and a
    /// compressed one would otherwise be refused as JSON or CSV that does not parse.
    func refuseContentCoding() throws {
        guard let coding = headers.value(of: .contentEncoding),
            coding.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces).lowercased() != "identity" })
        else { return }
        var error = APIError(.unsupportedMediaType, "request bodies are read as sent: Content-Encoding must be absent or identity")
        error.headers[.acceptEncoding] = "identity"
        throw error
    }

    /// Whether a `Content-Type` value is `application/json` or a `+json` type: its media type (what
    /// comes before the first `;`, spaces and tabs around it ignored) compared without regard to ASCII
    /// case. By hand on the UTF-8 bytes, not with Foundation's `trimmingCharacters` and `lowercased`:
    /// every JSON request body is checked with it.
    static func namesJSON(_ contentType: String) -> Bool {
        var mediaType = contentType.utf8[...]
        if let semicolon = mediaType.firstIndex(of: UInt8(ascii: ";")) { mediaType = mediaType[..<semicolon] }
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        while let first = mediaType.first, blank(first) { mediaType.removeFirst() }
        while let last = mediaType.last, blank(last) { mediaType.removeLast() }
        func matches(_ bytes: Substring.UTF8View, _ lowercase: String) -> Bool {
            bytes.count == lowercase.utf8.count && zip(bytes, lowercase.utf8).allSatisfy { byte, expected in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 == expected : byte == expected
            }
        }
        return matches(mediaType, "application/json") || matches(mediaType.suffix(5), "+json")
    }

    /// `bytes` through `JSONDecoder`: `400 invalidJSON` when not JSON, when not of `Value`'s shape,
    /// or when an object in it names a member twice (`JSONDuplicateKey`).
    private static func decoded<Value: Decodable>(_ type: Value.Type, from bytes: Data) throws -> JSONBody<Value> {
        // `JSONDecoder` also reads UTF-16 and UTF-32 (it tells them by a byte order mark or by
        // zero bytes); a body is UTF-8 JSON (`charset=utf-8`), as every other reader here takes it.
        if Self.isUTF16Or32(bytes) { throw APIError.invalidJSON("the body must be UTF-8 JSON, not UTF-16 or UTF-32") }
        let value: Value
        do {
            value = try JSONCoding.decoder().decode(Value.self, from: bytes)
        } catch let error as DecodingError {
            throw APIError.invalidJSON(error, body: bytes)
        }
        if let repeated = JSONDuplicateKey.find(in: bytes) { throw APIError.repeatedKey(repeated) }
        return JSONBody(value: value, bytes: bytes)
    }

    /// Whether `bytes` begin as UTF-16 or UTF-32 text does: a byte order mark `FE FF` or `FF FE`, or a
    /// zero byte among the first two, which UTF-8 JSON never has (its text holds no raw NUL).
    static func isUTF16Or32(_ bytes: Data) -> Bool {
        guard bytes.count >= 2 else { return false }
        let first = bytes[bytes.startIndex], second = bytes[bytes.startIndex + 1]
        return first == 0 || second == 0 || (first == 0xFE && second == 0xFF) || (first == 0xFF && second == 0xFE)
    }

    /// A query parameter, nil when absent (form-decoded: `+` is a space; see `URI.formValue`);
    /// `400` when it is given more than once.
    func query(_ name: String) throws -> String? {
        do {
            return try uri.formValue(name)
        } catch {
            throw APIError.repeatedParameter(name)
        }
    }

    /// An integer query parameter, nil when absent; `400` when it does not parse.
    func intQuery(_ name: String) throws -> Int? {
        guard let raw = try query(name) else { return nil }
        guard let number = Int(raw) else { throw APIError.invalidParameter(name, "\(name) must be an integer") }
        return number
    }

    /// The `If-Match` condition, nil when the header is absent; `400` when it is not `*` or a list of
    /// entity tags. Tags compare as strings (strong comparison): `"01"` or a weak `W/"1"` never match.
    func versionPrecondition() throws -> VersionPrecondition? {
        try entityTagCondition(.ifMatch, named: "If-Match", weakComparison: false)
    }

    /// The `If-None-Match` condition of a read, nil when the header is absent: the versions whose
    /// representation the client holds (`*`: any). Tags compare weakly (RFC 9110, section 13.1.2):
    /// `W/"3"` names version 3. `400` when it is not `*` or a list of entity tags.
    func ifNoneMatch() throws -> VersionPrecondition? {
        try entityTagCondition(.ifNoneMatch, named: "If-None-Match", weakComparison: true)
    }

    /// The condition of header `field`, nil when it is absent; `400` naming it as `name` (HTTPTypes
    /// keeps a field's name in lower case) when it is not `*` or a list of entity tags. Several
    /// header lines are one list (RFC 9110, section 5.3).
    private func entityTagCondition(_ field: HTTPField.Name, named name: String, weakComparison: Bool) throws -> VersionPrecondition? {
        let values = headers[values: field]
        guard !values.isEmpty else { return nil }
        guard let condition = Self.parseEntityTags(values.joined(separator: ", "), weakComparison: weakComparison) else {
            throw APIError.invalidParameter(name, "\(name) must be * or a list of entity tags like \"3\"")
        }
        return condition
    }

    /// Parses `"*" / #entity-tag` (RFC 9110's `If-Match` and `If-None-Match`), nil when `value` is
    /// neither: the versions its tags name (a tag that is no version names none), a weak tag's only
    /// when `weakComparison`. The list grammar allows empty elements (`"x", , "1"`), a tag may hold
    /// a comma (`"a,b"`), and `*` stands alone.
    private static func parseEntityTags(_ value: String, weakComparison: Bool) -> VersionPrecondition? {
        let bytes = Array(value.utf8)
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        // etagc = %x21 / %x23-7E (obs-text is left out, as the OpenAPI pattern does)
        func isTagCharacter(_ byte: UInt8) -> Bool { byte == 0x21 || (0x23...0x7E).contains(byte) }
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        if end - start == 1, bytes[start] == UInt8(ascii: "*") { return .any }
        var versions: [Int] = []
        var index = start
        while index < end {
            if isSpace(bytes[index]) || bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            var weak = false
            if bytes[index] == UInt8(ascii: "W"), index + 1 < end, bytes[index + 1] == UInt8(ascii: "/") {
                weak = true
                index += 2
            }
            guard index < end, bytes[index] == UInt8(ascii: "\"") else { return nil }
            index += 1
            let contentStart = index
            while index < end, bytes[index] != UInt8(ascii: "\"") {
                guard isTagCharacter(bytes[index]) else { return nil }
                index += 1
            }
            guard index < end else { return nil }
            let content = String(decoding: bytes[contentStart..<index], as: UTF8.self)
            index += 1
            if !weak || weakComparison, let version = Int(content), String(version) == content { versions.append(version) }
            while index < end, isSpace(bytes[index]) { index += 1 }
            guard index == end || bytes[index] == UInt8(ascii: ",") else { return nil }
        }
        return .oneOf(versions)
    }

    /// The `Idempotency-Key` header: nil when absent, `400` when empty, over 255 characters, not
    /// UTF-8, or holding a control character (a header may carry a tab).
    func idempotencyKey() throws -> String? {
        let fields = headers[fields: Self.idempotencyKeyField]
        guard let field = fields.first else { return nil }
        // Two keys: which one the retry will send cannot be told.
        guard fields.count == 1 else {
            throw APIError.invalidParameter("Idempotency-Key", "Idempotency-Key is given more than once; give it once")
        }
        // Bytes that are not UTF-8 read as U+FFFD (NIO decodes header lines so before they get
        // here), and `k\xFF` and `k\xFE` would be one key: a U+FFFD is refused as what it stands for.
        let key = field.withUnsafeBytesOfValue { String(validating: $0, as: UTF8.self) }
        guard let key, (1...255).contains(key.count), !TextRule.hasControlCharacter(key),
            !key.unicodeScalars.contains(Unicode.Scalar(0xFFFD)!)
        else {
            throw APIError.invalidParameter("Idempotency-Key", "Idempotency-Key must be 1-255 characters without control characters")
        }
        return key
    }

    static let idempotencyKeyField = HTTPField.Name("Idempotency-Key")!

    /// Identifies a request for idempotency: method, path and the body compared as JSON
    /// (`CanonicalJSON`: whitespace, member order, escapes and number spellings aside, and a leading
    /// byte order mark, which the JSON decoder reads past), a body that is not JSON as its bytes.
    /// `2:` and the SHA-256 in hex.
    func fingerprint(body: Data) -> String {
        var hasher = SHA256()
        hasher.update(data: Data("\(method.rawValue) \(uri.path)\n".utf8))
        let json = body.starts(with: [0xEF, 0xBB, 0xBF]) ? body.dropFirst(3) : body
        if let form = CanonicalJSON.form(of: json) {
            hasher.update(data: Data("c".utf8))
            hasher.update(data: form)
        } else {
            hasher.update(data: Data("r".utf8))
            hasher.update(data: body)
        }
        return "2:" + Hex.string(hasher.finalize())
    }

    /// The fingerprint as answers stored before `2:` fingerprints were computed it (the body
    /// re-encoded by JSONSerialization with sorted keys): a retry of such a request still replays.
    func legacyFingerprint(body: Data) -> String {
        var canonical = Data()
        if !body.isEmpty, let object = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed])
        {
            canonical = data
        } else {
            canonical = body
        }
        var hasher = SHA256()
        hasher.update(data: Data("\(method.rawValue) \(uri.path)\n".utf8))
        hasher.update(data: canonical)
        return Hex.string(hasher.finalize())
    }

    /// An idempotent request for the store when the request has an `Idempotency-Key`.
    func idempotency<Value: Sendable>(
        user: UserID, scope: IdempotencyScope, body: Data, render: @escaping @Sendable (Value) throws -> Reply
    ) throws -> IdempotentRequest<Value>? {
        guard let key = try idempotencyKey() else { return nil }
        return IdempotentRequest(
            key: IdempotencyKey(user: user, scope: scope, key: key),
            fingerprint: fingerprint(body: body),
            legacyFingerprint: { self.legacyFingerprint(body: body) },
            render: { result in
                switch result {
                case .success(let value):
                    return try? render(value).stored
                case .failure(let error):
                    let apiError = APIError(error)
                    return apiError.isDecided ? apiError.reply.stored : nil
                }
            }
        )
    }
}

extension APIError {
    /// `400 invalidJSON` for a member name given twice in one object: which value the client meant
    /// is not known.
    static func repeatedKey(_ repeated: JSONDuplicateKey.Finding) -> APIError {
        .invalidJSON("field '\(repeated.field)' is given twice in one object; a name may appear once", field: repeated.field)
    }

    /// `400 invalidJSON` describing a decoding failure of `body` and the field it happened at.
    static func invalidJSON(_ error: DecodingError, body: Data) -> APIError {
        func path(_ codingPath: [any CodingKey]) -> String? {
            codingPath.isEmpty ? nil : FieldPath(codingPath.map { key in key.intValue.map { .index($0) } ?? .key(key.stringValue) }).text
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath + [key])
            return .invalidJSON("missing field '\(field ?? key.stringValue)'", field: field)
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            // Every request body is an object: at the top, the body itself is of the wrong type.
            guard let field = path(context.codingPath) else { return .invalidJSON("the body must be a JSON object") }
            return .invalidJSON("field '\(field)' has the wrong type or is null", field: field)
        case .dataCorrupted(let context):
            if let field = path(context.codingPath) {
                return .invalidJSON("field '\(field)' is invalid: \(context.debugDescription)", field: field)
            }
            // swift-foundation's decoder says "not valid JSON", naming no field, of a number its
            // field cannot hold (swiftlang/swift-foundation#1604): the body is read again for it.
            switch JSONNumberMisfit.find(in: body) {
            case .notJSON:
                return .invalidJSON("body is not valid JSON")
            case .noMisfit:
                return .invalidJSON("a value in the body does not fit its field")
            case .misfit(let field, let number, let wholeNumberExpected):
                let expected = wholeNumberExpected ? "a whole number in range" : "a number in range"
                let field = field.isEmpty ? nil : field
                return .invalidJSON("field '\(field ?? "body")' has the wrong type: \(number) is not \(expected)", field: field)
            }
        @unknown default:
            return .invalidJSON("body is not valid JSON")
        }
    }
}

extension ClientID {
    /// A clientID that parsed (a path's or a query's); `400 invalidParameter` on `clientID` when it
    /// did not.
    static func required(_ clientID: ClientID?) throws -> ClientID {
        guard let clientID else { throw APIError.invalidParameter("clientID", ClientID.rule) }
        return clientID
    }
}
