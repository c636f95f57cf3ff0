extension String {
    /// The string with every character a terminal or a log reader would act on written as a visible
    /// escape (`\u{1B}`): C0 controls (U+0000-U+001F), DEL, C1 controls (U+0080-U+009F) and the
    /// bidirectional overrides and isolates (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) that can
    /// make a line read differently from its bytes. Used for every stored value printed to a log or a
    /// terminal, since databases written before the input rule may hold such values.
    public var terminalSafe: String {
        guard needsTerminalEscape else { return self }
        var escaped = ""
        escaped.reserveCapacity(utf8.count + 8)
        for scalar in unicodeScalars {
            if Self.needsEscape(scalar) {
                escaped += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// Whether `terminalSafe` would change the string.
    public var needsTerminalEscape: Bool {
        // Printable ASCII, what nearly every logged value is, needs nothing: told from the bytes
        // alone, without the scan of its scalars.
        let printable = utf8.withContiguousStorageIfAvailable { bytes in
            bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
        }
        if printable == true { return false }
        return unicodeScalars.contains(where: Self.needsEscape)
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
