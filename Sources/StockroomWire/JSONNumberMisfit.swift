/// The number in a request body that its field cannot hold, found after `JSONDecoder` failed.
///
/// swift-foundation's `JSONDecoder` answers a number its field cannot hold (`1.5` or
/// `9223372036854775808` for an `Int`, `1e400` for a `Double`) as "The given data was not valid
/// JSON", with no coding path (swiftlang/swift-foundation#1604). So that such a body is answered
/// as what it is, a field of the wrong type, and not as a body that is not JSON, the server reads
/// the body again with this when the decoder's error names no field: a check of the JSON grammar
/// that keeps the path of keys and indices to each number. It runs only on that error path.
public enum JSONNumberMisfit {
    /// What a second reading found.
    public enum Finding: Equatable, Sendable {
        /// The bytes are not JSON text (or nest deeper than `maxDepth`): the decoder was right.
        case notJSON
        /// JSON text, and no number in it that its field could not hold.
        case noMisfit
        /// The first number, in document order, that cannot be a `Double` (it overflows, or a
        /// non-zero value underflows to zero), or that stands under one of `wholeNumberKeys` and is
        /// not a whole number within `Int`'s range. `field` is written as the decoder's paths are
        /// (`operations[2].item.status.inStock.quantity`); `number` is the number's text.
        case misfit(field: String, number: String, wholeNumberExpected: Bool)
    }

    /// The keys whose values the contract's request bodies read as whole numbers: an in-stock
    /// item's `quantity`, a version (`version`, `baseVersion`) and a checkpoint's `depth`.
    public static let wholeNumberKeys: Set<String> = ["quantity", "version", "baseVersion", "depth"]

    /// Objects and arrays nested deeper than this are answered as `notJSON`.
    public static let maxDepth = 512

    /// What `bytes` hold: not JSON, JSON whose numbers all fit, or the first number that does not.
    public static func find(in bytes: some Collection<UInt8>) -> Finding {
        var reader = Reader(tokens: JSONTokens(Array(bytes)))
        reader.tokens.skipSpace()
        guard reader.value(depth: 0) else { return .notJSON }
        reader.tokens.skipSpace()
        guard reader.tokens.atEnd else { return .notJSON }
        return reader.found ?? .noMisfit
    }

    /// The grammar read (`JSONTokens`) with the path of keys and indices to where it stands.
    private struct Reader {
        var tokens: JSONTokens
        var path: [FieldPath.Step] = []
        var found: Finding?

        mutating func value(depth: Int) -> Bool {
            guard let byte = tokens.next else { return false }
            switch byte {
            case UInt8(ascii: "{"): return depth < JSONNumberMisfit.maxDepth && object(depth: depth + 1)
            case UInt8(ascii: "["): return depth < JSONNumberMisfit.maxDepth && array(depth: depth + 1)
            case UInt8(ascii: "\""):
                var text: [UInt8] = []
                return tokens.string(into: &text)
            case UInt8(ascii: "t"): return tokens.literal("true")
            case UInt8(ascii: "f"): return tokens.literal("false")
            case UInt8(ascii: "n"): return tokens.literal("null")
            default:
                guard let number = tokens.number() else { return false }
                if found == nil { check(number.text, whole: number.whole) }
                return true
            }
        }

        mutating func object(depth: Int) -> Bool {
            tokens.index += 1
            tokens.skipSpace()
            if tokens.take(UInt8(ascii: "}")) { return true }
            while true {
                guard let key = tokens.memberKey() else { return false }
                path.append(.key(String(decoding: key, as: UTF8.self)))
                guard value(depth: depth) else { return false }
                path.removeLast()
                tokens.skipSpace()
                if tokens.take(UInt8(ascii: ",")) { continue }
                return tokens.take(UInt8(ascii: "}"))
            }
        }

        mutating func array(depth: Int) -> Bool {
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

        /// Keeps the number as the finding when it cannot be a `Double`, or when it stands under a
        /// whole-number key and is not a whole number in `Int`'s range.
        mutating func check(_ text: String, whole: Bool) {
            guard let double = Double(text) else { return }
            let nonZeroDigit = text.prefix { $0 != "e" && $0 != "E" }.contains { ("1"..."9").contains($0) }
            let fitsDouble = double.isFinite && (double != 0 || !nonZeroDigit)
            var wholeNumberExpected = false
            if case .key(let key)? = path.last, JSONNumberMisfit.wholeNumberKeys.contains(key) { wholeNumberExpected = true }
            let fitsInt = whole ? Int(text) != nil : (double.rounded() == double && abs(double) < 0x1p63)
            guard !fitsDouble || (wholeNumberExpected && !fitsInt) else { return }
            found = .misfit(field: FieldPath(path).text, number: text, wholeNumberExpected: wholeNumberExpected)
        }
    }
}

/// Where a value stands in a JSON document, written as the contract's error `field`s are: keys
/// joined with `.`, array indices in brackets (`items[3].status.inStock.quantity`).
public struct FieldPath: Sendable {
    public enum Step: Sendable {
        case key(String)
        case index(Int)
    }

    public var steps: [Step]

    public init(_ steps: [Step]) {
        self.steps = steps
    }

    /// The path as text; empty for the document itself.
    public var text: String {
        var text = ""
        for step in steps {
            switch step {
            case .key(let key): text += text.isEmpty ? key : "." + key
            case .index(let position): text += "[\(position)]"
            }
        }
        return text
    }
}
