import Foundation

/// A user's identity: the `user` a token acts for.
///
/// Two identities are the same user exactly when their stored UTF-8 bytes are equal, the same rule
/// SQLite's `=` applies, so the store and Swift can never disagree about who owns what. (Swift's
/// `String ==` compares by canonical equivalence: "José" in NFC and in NFD would be one user to it
/// and two to SQL.) New names are normalized to NFC by `init(validating:)`, so a name typed either
/// way is one user; names stored before that rule keep their bytes and stay distinct users.
public struct UserID: Hashable, Sendable, CustomStringConvertible {
    /// The stored bytes of the name, as text.
    public let rawValue: String

    /// The most characters a user name may have.
    public static let maxCharacters = 64
    /// The most UTF-8 bytes a user name may have.
    public static let maxBytes = 256

    /// An identity as stored (a token's row); no normalization, no checks.
    public init(stored rawValue: String) {
        self.rawValue = rawValue
    }

    /// A new user name, as an admin types it: trimmed of surrounding whitespace, normalized to NFC,
    /// then 1-64 characters (at most 256 UTF-8 bytes) of letters, marks, digits, spaces and `. _ - @ +`.
    /// Anything else (control and format characters, symbols, other whitespace) is refused.
    public init(validating text: String) throws(DomainError) {
        let name = text.trimmingWhitespace().precomposedStringWithCanonicalMapping
        guard !name.isEmpty else { throw .validationFailed(field: "user", message: "user must not be empty") }
        guard name.count <= Self.maxCharacters, name.utf8.count <= Self.maxBytes else {
            throw .validationFailed(
                field: "user", message: "user must be at most \(Self.maxCharacters) characters and \(Self.maxBytes) UTF-8 bytes")
        }
        for scalar in name.unicodeScalars where !Self.allowed(scalar) {
            let code = "U+" + String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4)
            throw .validationFailed(
                field: "user",
                message: "user may hold letters, digits, spaces and . _ - @ + only, not \(code)")
        }
        self.rawValue = name
    }

    private static func allowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case " ", ".", "_", "-", "@", "+": return true
        default: break
        }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .nonspacingMark, .spacingMark, .enclosingMark,
            .decimalNumber, .letterNumber, .otherNumber:
            return true
        default:
            return false
        }
    }

    public static func == (lhs: UserID, rhs: UserID) -> Bool {
        lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        var bytes = rawValue
        bytes.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { rawValue }
}
extension String {
    func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}

extension UserID: ExpressibleByStringLiteral {
    /// A literal identity, taken as stored (tests, the demo user).
    public init(stringLiteral value: String) {
        self.init(stored: value)
    }
}
