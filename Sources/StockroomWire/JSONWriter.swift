import Foundation
import StockroomCore

/// Writes the contract's JSON straight into bytes: every body the server sends. `JSONEncoder` costs
/// more than the request itself on the hot paths (a page of 100 items, every change-log value), and
/// on Linux it orders an object's keys differently from one encode to the next. The output decodes
/// to what `JSONCoding.encoder()` writes for the same value, with keys in declaration order;
/// `JSONWriterTests` and `AnswerJSONTests` hold the two to that.
public struct JSONWriter: Sendable {
    /// The JSON written so far.
    public private(set) var bytes: [UInt8]

    /// An empty writer with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// The JSON as a string.
    public var string: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends raw, already valid JSON (or punctuation).
    public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends already encoded JSON bytes.
    public mutating func raw(json: some Sequence<UInt8>) {
        bytes.append(contentsOf: json)
    }

    /// `values` as a JSON array, each written by its own `write(to:)`.
    public mutating func array(_ values: some Sequence<some JSONWritable>) {
        raw("[")
        for (index, value) in values.enumerated() {
            if index > 0 { raw(",") }
            value.write(to: &self)
        }
        raw("]")
    }

    /// Empties the writer, keeping its storage: the streams reuse one buffer for every chunk.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
    }

    /// Drops everything written after the first `count` bytes.
    public mutating func truncate(to count: Int) {
        bytes.removeSubrange(count...)
    }

    /// A quoted, escaped string: `"`, `\` and U+0000-U+001F escaped, `/` and non-ASCII kept as they are.
    public mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { string(utf8: $0) }
    }

    /// A quoted, escaped string from UTF-8 bytes (a column read in place, with no `String` made).
    public mutating func string(utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var start = 0
        for index in 0..<utf8.count {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
            start = index + 1
            switch byte {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0x08: raw("\\b")
            case 0x0C: raw("\\f")
            default:
                raw("\\u00")
                bytes.append(Hex.digit(byte >> 4))
                bytes.append(Hex.digit(byte & 0x0F))
            }
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        bytes.append(UInt8(ascii: "\""))
    }

    /// An optional string, `null` when nil.
    public mutating func string(_ value: String?) {
        if let value { string(value) } else { raw("null") }
    }

    /// A whole number.
    public mutating func int(_ value: Int64) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for 24 digits, reversed
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            if value < 0 { bytes.append(UInt8(ascii: "-")) }
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[index]) }
        }
    }

    /// A whole number.
    public mutating func int(_ value: Int) {
        int(Int64(value))
    }

    /// A whole number. Concrete overloads above: this generic one is not specialized across modules,
    /// and goes through witness calls on every number of a feed page.
    public mutating func int<I: BinaryInteger>(_ value: I) {
        if let value = Int64(exactly: value) { int(value) } else { bytes.append(contentsOf: "\(value)".utf8) }
    }

    /// A number as `JSONEncoder` writes a `Double`: the shortest form that reads back, without a trailing `.0`.
    public mutating func double(_ value: Double) {
        if shortDecimal(value) { return }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// `double`'s form of a value with at most six decimals and a magnitude from 0.0001 to 10^9 (a
    /// colour's components, typically): the fewest decimals `d` for which `n / 10^d` reads back as
    /// `value` (a correctly rounded division, as parsing is), written as `n` with its point. In that
    /// range `description` writes that same decimal form (its shortest), and no other `n` of `d`
    /// decimals reads back (10^-6 is wider than the spacing of doubles below 10^9). False, nothing
    /// written, outside it. Cheaper than `description`, and a colour has three such numbers.
    private mutating func shortDecimal(_ value: Double) -> Bool {
        let magnitude = value.magnitude
        if value == 0 {
            guard value.sign == .plus else { return false }  // -0: `description` writes "-0.0"
            bytes.append(UInt8(ascii: "0"))
            return true
        }
        guard magnitude >= 1e-4, magnitude < 1e9 else { return false }
        var scale = 1.0
        for decimals in 0...6 {
            let units = (magnitude * scale).rounded()
            if units / scale == magnitude {
                let whole = Int64(units)
                if value < 0 { bytes.append(UInt8(ascii: "-")) }
                var unit: Int64 = 1
                for _ in 0..<decimals { unit *= 10 }
                int(whole / unit)
                if decimals > 0 {
                    bytes.append(UInt8(ascii: "."))
                    fixed(whole % unit, width: decimals)
                }
                return true
            }
            scale *= 10
        }
        return false
    }

    /// An item id in its canonical lowercase form, quoted.
    public mutating func itemID(_ id: ItemID) {
        bytes.append(UInt8(ascii: "\""))
        id.forEachCanonicalByte { bytes.append($0) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// An item id in its canonical lowercase form, without quotes (a CSV cell).
    public mutating func itemIDUnquoted(_ id: ItemID) {
        id.forEachCanonicalByte { bytes.append($0) }
    }

    /// A boolean.
    public mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    /// A time in milliseconds since 1970 as `"2026-11-22T06:00:00.123Z"` (without the quotes when
    /// not `quoted`: a CSV cell).
    public mutating func timestamp(milliseconds: Int64, quoted: Bool = true) {
        var seconds = milliseconds / 1000
        var millis = milliseconds % 1000
        if millis < 0 {
            millis += 1000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = Self.civil(daysSince1970: days)
        precondition(year >= 0, "a time before year 0")
        // The bytes after the year put together on the stack and appended once, each digit by a
        // constant divisor: one capacity check instead of one per byte, no division by a variable.
        // A year of four digits goes in with them; a later one is written first, all its digits.
        let fourDigitYear = year <= 9999
        if !fourDigitYear {
            if quoted { bytes.append(UInt8(ascii: "\"")) }
            int(year)
        }
        let hour = secondOfDay / 3600, minute = secondOfDay / 60 % 60, second = secondOfDay % 60
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 26) { buffer in
            let zero = UInt8(ascii: "0")
            var index = 0
            func put(_ byte: UInt8) {
                buffer[index] = byte
                index += 1
            }
            func two(_ value: Int64) {
                put(zero + UInt8(truncatingIfNeeded: value / 10))
                put(zero + UInt8(truncatingIfNeeded: value % 10))
            }
            if fourDigitYear {
                if quoted { put(UInt8(ascii: "\"")) }
                two(year / 100)
                two(year % 100)
            }
            put(UInt8(ascii: "-"))
            two(month)
            put(UInt8(ascii: "-"))
            two(day)
            put(UInt8(ascii: "T"))
            two(hour)
            put(UInt8(ascii: ":"))
            two(minute)
            put(UInt8(ascii: ":"))
            two(second)
            put(UInt8(ascii: "."))
            put(zero + UInt8(truncatingIfNeeded: millis / 100))
            two(millis % 100)
            put(UInt8(ascii: "Z"))
            if quoted { put(UInt8(ascii: "\"")) }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<index]))
        }
    }

    /// A time as `"2026-11-22T06:00:00.123Z"`.
    public mutating func timestamp(_ date: Date) {
        timestamp(milliseconds: Timestamp.milliseconds(date))
    }

    /// An optional time, `null` when nil.
    public mutating func timestamp(_ date: Date?) {
        if let date { timestamp(date) } else { raw("null") }
    }

    private mutating func fixed(_ value: Int64, width: Int) {
        var divisor: Int64 = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        if rest >= divisor * 10 {  // a year past 9999: all its digits
            int(rest)
            return
        }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// The proleptic Gregorian date of a day count (Howard Hinnant's `civil_from_days`).
    static func civil(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
