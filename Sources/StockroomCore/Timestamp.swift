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

    /// Parses an RFC 3339 time; nil when it is not one.
    public static func parse(_ string: String) -> Date? {
        guard
            let parsed = (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(string))
                ?? (try? Date.ISO8601FormatStyle().parse(string))
        else { return nil }
        return date(milliseconds: Int64((parsed.timeIntervalSince1970 * 1000).rounded()))
    }
}
