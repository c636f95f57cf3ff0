import Foundation

/// Millisecond-precision UTC times, as stored and as written on the wire.
public enum Timestamp {
    /// The milliseconds since 1970 of `date`, truncated. A `Date` made from whole milliseconds is a
    /// binary fraction a hair below them, so a microsecond of slack keeps it from losing one.
    public static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000 + 0.001).rounded(.down))
    }

    /// The date of a millisecond count.
    public static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// Now, truncated to milliseconds so that what is stored equals what is returned.
    public static func now() -> Date { date(milliseconds: milliseconds(Date())) }

    /// `2026-11-22T06:00:00.123Z`.
    public static func format(_ date: Date) -> String {
        let ms = milliseconds(date)
        var seconds = ms / 1000
        var millis = ms % 1000
        if millis < 0 { millis += 1000; seconds -= 1 }
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(millis)
        )
    }

    /// Parses an RFC 3339 time; nil when it is not one. The form the contract writes
    /// (`2026-11-22T06:00:00.123Z`, with 0-3 fraction digits, UTC) is read by hand; anything else
    /// (an offset, more digits, a date out of range) by Foundation's ISO 8601 parser.
    public static func parse(_ string: String) -> Date? {
        if let milliseconds = utcMilliseconds(string) { return date(milliseconds: milliseconds) }
        return parseWithFoundation(string)
    }

    /// The milliseconds of `YYYY-MM-DDTHH:MM:SS[.f{1,3}]Z` with every field in range, from 1600 on;
    /// nil for any other text, which `parseWithFoundation` then reads (it counts days before the
    /// Gregorian reform of 1582 in the Julian calendar).
    static func utcMilliseconds(_ string: String) -> Int64? {
        var string = string
        return string.withUTF8 { utcMilliseconds(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// `parse` of a text's UTF-8 bytes; the common form is read without making a `String`.
    public static func parse(utf8 bytes: UnsafeRawBufferPointer) -> Date? {
        if let milliseconds = utcMilliseconds(utf8: bytes) { return date(milliseconds: milliseconds) }
        return parseWithFoundation(String(decoding: bytes, as: UTF8.self))
    }

    /// `utcMilliseconds` of a text's UTF-8 bytes.
    static func utcMilliseconds(utf8 bytes: UnsafeRawBufferPointer) -> Int64? {
        let count = bytes.count
        guard count >= 20, count <= 24, bytes[count - 1] == UInt8(ascii: "Z"), bytes[4] == UInt8(ascii: "-"),
            bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
            bytes[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ start: Int, _ length: Int) -> Int64? {
            var value: Int64 = 0
            for index in start..<(start + length) {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2), year >= 1600, (1...12).contains(month), day >= 1,
            day <= daysInMonth(year: year, month: month), hour < 24, minute < 60, second < 60
        else { return nil }
        var millis: Int64 = 0
        if count > 20 {
            // `.` and one to three digits, scaled to milliseconds.
            guard bytes[19] == UInt8(ascii: "."), count > 21, let fraction = number(20, count - 21) else { return nil }
            millis = fraction * [100, 10, 1][count - 22]
        }
        let days = daysSince1970(year: year, month: month, day: day)
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    }

    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a civil date (the proleptic Gregorian calendar; Howard Hinnant's `days_from_civil`).
    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Foundation's ISO 8601 reading, with or without fractional seconds, rounded to milliseconds.
    static func parseWithFoundation(_ string: String) -> Date? {
        guard
            let parsed = (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(string))
                ?? (try? Date.ISO8601FormatStyle().parse(string))
        else { return nil }
        return date(milliseconds: Int64((parsed.timeIntervalSince1970 * 1000).rounded()))
    }
}
