/// One device of a user: 1-64 characters of `[A-Za-z0-9._-]`, compared byte for byte.
///
/// A value of this type is always well formed: the server refuses a malformed one where it arrives
/// (`400 invalidParameter` in a path, `400 invalidJSON` in a body), so no layer below checks again.
public struct ClientID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The identifier as written.
    public let rawValue: String

    /// The most characters a client identifier may have.
    public static let maxLength = 64

    /// What a well-formed identifier looks like, for error messages.
    public static let rule = "clientID must be 1-64 characters of [A-Za-z0-9._-]"

    /// A client identifier; nil when `string` is not one.
    public init?(_ string: String) {
        guard Self.isValid(string) else { return nil }
        rawValue = string
    }

    /// An identifier read back from the store, which only ever holds valid ones; no checks.
    public init(stored rawValue: String) {
        self.rawValue = rawValue
    }

    /// Whether `string` is a well-formed client identifier.
    public static func isValid(_ string: String) -> Bool {
        let utf8 = string.utf8
        guard (1...maxLength).contains(utf8.count) else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }

    public var description: String { rawValue }

    public static func < (lhs: ClientID, rhs: ClientID) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension ClientID: ExpressibleByStringLiteral {
    /// A literal identifier, as code and tests write one (`"phone"`); a malformed literal is a
    /// programming error and traps.
    public init(stringLiteral value: String) {
        guard let id = ClientID(value) else { preconditionFailure("'\(value)' is not a client identifier: \(Self.rule)") }
        self = id
    }
}
