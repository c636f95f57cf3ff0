/// The first member name given twice in one object of a request body.
///
/// RFC 8259 leaves a repeated name's meaning to each reader: swift-foundation's `JSONDecoder` keeps
/// one of the values, other readers (a proxy, a log pipeline, a client's own check) may keep the
/// other, so one body could mean two different writes. The contract's bodies never repeat a name,
/// and the server answers one that does as `400 invalidJSON` naming it (I-JSON, RFC 7493 §2.3, has
/// names unique). Names compare after their escapes are read (`"a"` and `"\u0061"` are one name).
///
/// `Draft(fastJSON:)` and the command reader give up on a repeated key, so this runs only where
/// `JSONDecoder` reads a body, before it does.
public enum JSONDuplicateKey {
    /// Where the repeated name stands, written as the contract's error `field`s are
    /// (`operations[2].item.name`), and the name.
    public struct Finding: Equatable, Sendable {
        public var field: String
        public var name: String

        public init(field: String, name: String) {
            self.field = field
            self.name = name
        }
    }

    /// The first repeated name in document order; nil when there is none, and for bytes that are
    /// not JSON (or nest deeper than `JSONNumberMisfit.maxDepth`), which `JSONDecoder` answers.
    public static func find(in bytes: some Collection<UInt8>) -> Finding? {
        // Only an object names members: bytes without a `{` are not read again.
        guard bytes.contains(UInt8(ascii: "{")) else { return nil }
        return JSONPathReader.read(bytes, visitor: Visitor())?.found
    }

    private struct Visitor: JSONPathVisitor {
        var found: Finding?

        mutating func member(path: [FieldPath.Step], repeated: Bool) {
            guard repeated, found == nil, case .key(let name)? = path.last else { return }
            found = Finding(field: FieldPath(path).text, name: name)
        }
    }
}
