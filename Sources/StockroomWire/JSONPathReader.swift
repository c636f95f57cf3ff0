/// A second reading of a JSON text by its grammar (`JSONTokens`), keeping the path of keys and
/// indices to where it stands and telling a visitor of each member name and number: what
/// `JSONNumberMisfit` and `JSONDuplicateKey` share, each looking for one thing `JSONDecoder` does
/// not say.
struct JSONPathReader<Visitor: JSONPathVisitor> {
    /// Objects and arrays nested deeper than this are not read (the text counts as not JSON).
    static var maxDepth: Int { 512 }

    private var tokens: JSONTokens
    private var path: [FieldPath.Step] = []
    private(set) var visitor: Visitor

    /// The visitor after reading all of `bytes`; nil when they are not one JSON text.
    static func read(_ bytes: some Collection<UInt8>, visitor: Visitor) -> Visitor? {
        var reader = JSONPathReader(tokens: JSONTokens(Array(bytes)), visitor: visitor)
        reader.tokens.skipSpace()
        guard reader.value(depth: 0) else { return nil }
        reader.tokens.skipSpace()
        return reader.tokens.atEnd ? reader.visitor : nil
    }

    private mutating func value(depth: Int) -> Bool {
        guard let byte = tokens.next else { return false }
        switch byte {
        case UInt8(ascii: "{"): return depth < Self.maxDepth && object(depth: depth + 1)
        case UInt8(ascii: "["): return depth < Self.maxDepth && array(depth: depth + 1)
        case UInt8(ascii: "\""):
            var text: [UInt8] = []
            return tokens.string(into: &text)
        case UInt8(ascii: "t"): return tokens.literal("true")
        case UInt8(ascii: "f"): return tokens.literal("false")
        case UInt8(ascii: "n"): return tokens.literal("null")
        default:
            guard let number = tokens.number() else { return false }
            visitor.number(number.text, whole: number.whole, path: path)
            return true
        }
    }

    private mutating func object(depth: Int) -> Bool {
        tokens.index += 1
        tokens.skipSpace()
        if tokens.take(UInt8(ascii: "}")) { return true }
        var names = Set<[UInt8]>()
        while true {
            guard let key = tokens.memberKey() else { return false }
            path.append(.key(String(decoding: key, as: UTF8.self)))
            visitor.member(path: path, repeated: !names.insert(key).inserted)
            guard value(depth: depth) else { return false }
            path.removeLast()
            tokens.skipSpace()
            if tokens.take(UInt8(ascii: ",")) { continue }
            return tokens.take(UInt8(ascii: "}"))
        }
    }

    private mutating func array(depth: Int) -> Bool {
        tokens.index += 1
        tokens.skipSpace()
        if tokens.take(UInt8(ascii: "]")) { return true }
        var position = 0
        while true {
            tokens.skipSpace()
            path.append(.index(position))
            guard value(depth: depth) else { return false }
            path.removeLast()
            position += 1
            tokens.skipSpace()
            if tokens.take(UInt8(ascii: ",")) { continue }
            return tokens.take(UInt8(ascii: "]"))
        }
    }
}

/// What a `JSONPathReader` tells as it reads.
protocol JSONPathVisitor {
    /// An object member's name, read (escapes resolved) and at the end of `path`; `repeated` when
    /// the same object named it before.
    mutating func member(path: [FieldPath.Step], repeated: Bool)
    /// A number's text, `whole` when written without a fraction or exponent, at `path`.
    mutating func number(_ text: String, whole: Bool, path: [FieldPath.Step])
}

extension JSONPathVisitor {
    mutating func member(path: [FieldPath.Step], repeated: Bool) {}
    mutating func number(_ text: String, whole: Bool, path: [FieldPath.Step]) {}
}
