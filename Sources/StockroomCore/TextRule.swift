/// The rule for text that names something (item and colour names, users, ids): it may hold any
/// Unicode scalar except the control characters U+0000-U+001F and U+007F.
///
/// Why: SQLite's C API, as GRDB calls it, binds and reads text as NUL-terminated C strings, so a
/// U+0000 would be stored cut short; and a control character in a name is never what a person
/// typed. Everything else (RTL marks, 4-byte emoji, combining marks) is stored byte for byte.
public enum TextRule {
    /// Whether `text` holds a control character: U+0000-U+001F or U+007F.
    public static func hasControlCharacter(_ text: some StringProtocol) -> Bool {
        // In UTF-8 these scalars are single bytes, and no byte of a multi-byte sequence is below 0x80.
        text.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    /// `validationFailed` on `field` when `text` holds a control character.
    public static func check(_ text: some StringProtocol, field: String) throws(DomainError) {
        guard !hasControlCharacter(text) else {
            throw .validationFailed(field: field, message: "\(field) must not contain control characters (U+0000-U+001F, U+007F)")
        }
    }
}
