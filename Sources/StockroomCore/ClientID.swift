/// Rules for a device identifier: 1-64 characters of `[A-Za-z0-9._-]`.
public enum ClientID {
    /// Whether `string` is a well-formed client identifier.
    public static func isValid(_ string: String) -> Bool {
        let utf8 = string.utf8
        guard (1...64).contains(utf8.count) else { return false }
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
}
