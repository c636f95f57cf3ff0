import Foundation

/// The first member name given twice in one object of a request body.
///
/// RFC 8259 leaves a repeated name's meaning to each reader: swift-foundation's `JSONDecoder` keeps
/// one of the values, other readers (a proxy, a log pipeline, a client's own check) may keep the
/// other, so one body could mean two different writes. The contract's bodies never repeat a name,
/// and the server answers one that does as `400 invalidJSON` naming it (I-JSON, RFC 7493 §2.3, has
/// names unique). Names compare after their escapes are read (`"a"` and `"\u0061"` are one name).
///
/// It runs after `JSONDecoder` has read a body, so the text is known to be JSON: this follows its
/// brackets, quotes and colons without checking the grammar again, allocates nothing for an
/// object of up to `linearLimit` names (each name is compared with its object's others, as bytes),
/// and writes the path only for the repeat it finds. `Draft(fastJSON:)` and the command reader give
/// up on a repeated key, so a body they take never comes here.
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

    /// An object with more names than this keeps them in a set, not a list compared one by one.
    static let linearLimit = 16

    /// The first repeated name in document order; nil when there is none. `bytes` must be JSON text
    /// (a decoder read it): for anything else the answer means nothing.
    public static func find(in bytes: some Collection<UInt8>) -> Finding? {
        let scan: (UnsafeBufferPointer<UInt8>) -> Finding? = { bytes in
            var scanner = Scanner(bytes: bytes)
            return scanner.firstRepeat()
        }
        if let found = bytes.withContiguousStorageIfAvailable(scan) { return found }
        return Array(bytes).withUnsafeBufferPointer(scan)
    }

    private struct Scanner {
        /// A name: the range of its text between the quotes, and whether it holds an escape.
        struct Name {
            var start: Int
            var end: Int
            var escaped: Bool
        }

        /// An open object or array.
        struct Container {
            var isObject: Bool
            /// An object's first name in `names`.
            var firstName: Int
            /// An array's current element.
            var position = 0
            /// An object's names, once it has more than `linearLimit`.
            var large: Set<[UInt8]>?
        }

        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        /// The names of every open object, outermost first: the last of an object's names is the
        /// one whose value is being read.
        var names: [Name] = []
        var containers: [Container] = []

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        mutating func firstRepeat() -> Finding? {
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "{"):
                    containers.append(Container(isObject: true, firstName: names.count))
                case UInt8(ascii: "["):
                    containers.append(Container(isObject: false, firstName: names.count))
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    guard let closed = containers.popLast() else { return nil }
                    names.removeSubrange(closed.firstName...)
                case UInt8(ascii: ","):
                    if let last = containers.indices.last, !containers[last].isObject { containers[last].position += 1 }
                case UInt8(ascii: "\""):
                    let name = string()
                    // A string in an object is a name when a colon follows it.
                    if containers.last?.isObject == true, nextIsColon() {
                        if isRepeat(name) { return finding(repeating: name) }
                        names.append(name)
                    }
                    continue
                default:
                    break
                }
                index += 1
            }
            return nil
        }

        /// The string at `index` (its opening quote); `index` moves past its closing quote.
        mutating func string() -> Name {
            index += 1
            var name = Name(start: index, end: index, escaped: false)
            // Most strings hold no escape: their end is the first quote, and no backslash comes before it.
            if let base = bytes.baseAddress, index < bytes.count, let quote = memchr(base + index, Int32(UInt8(ascii: "\"")), bytes.count - index) {
                let end = UnsafeRawPointer(quote) - UnsafeRawPointer(base)
                if memchr(base + index, Int32(UInt8(ascii: "\\")), end - index) == nil {
                    name.end = end
                    index = end + 1
                    return name
                }
            }
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    name.end = index
                    index += 1
                    return name
                case UInt8(ascii: "\\"):
                    name.escaped = true
                    index += 2
                default:
                    index += 1
                }
            }
            name.end = min(index, bytes.count)
            return name
        }

        func nextIsColon() -> Bool {
            var at = index
            while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x09 || bytes[at] == 0x0A || bytes[at] == 0x0D { at += 1 }
            return at < bytes.count && bytes[at] == UInt8(ascii: ":")
        }

        /// Whether the innermost object named `name` before.
        mutating func isRepeat(_ name: Name) -> Bool {
            guard let object = containers.indices.last else { return false }
            let first = containers[object].firstName
            if names.count - first < JSONDuplicateKey.linearLimit {
                return names[first...].contains { same($0, name) }
            }
            var large = containers[object].large ?? Set(names[first...].map(text))
            containers[object].large = nil
            let repeated = !large.insert(text(name)).inserted
            containers[object].large = large
            return repeated
        }

        func same(_ a: Name, _ b: Name) -> Bool {
            if a.escaped || b.escaped { return text(a) == text(b) }
            return a.end - a.start == b.end - b.start
                && memcmp(bytes.baseAddress! + a.start, bytes.baseAddress! + b.start, a.end - a.start) == 0
        }

        /// A name's text as UTF-8, its escapes read.
        func text(_ name: Name) -> [UInt8] {
            let raw = Array(bytes[name.start..<name.end])
            guard name.escaped else { return raw }
            var tokens = JSONTokens([UInt8(ascii: "\"")] + raw + [UInt8(ascii: "\"")])
            var text: [UInt8] = []
            return tokens.string(into: &text) ? text : raw
        }

        /// The path to `name`, a repeat in the innermost object.
        func finding(repeating name: Name) -> Finding {
            var steps: [FieldPath.Step] = []
            for (depth, container) in containers.enumerated() {
                if container.isObject {
                    // The name whose value holds the next container, or the repeat itself.
                    let holder = depth + 1 < containers.count ? containers[depth + 1].firstName - 1 : -1
                    let current = holder >= container.firstName ? names[holder] : name
                    steps.append(.key(String(decoding: text(current), as: UTF8.self)))
                } else {
                    steps.append(.index(container.position))
                }
            }
            return Finding(field: FieldPath(steps).text, name: String(decoding: text(name), as: UTF8.self))
        }
    }
}
