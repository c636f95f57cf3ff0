import Foundation
import HummingbirdCore

extension URI {
    /// The first value of the query parameter `name`, nil when absent, read as browsers, HTML
    /// forms and most HTTP libraries write a query (`application/x-www-form-urlencoded`): a `+`
    /// is a space, then `%XX` escapes are decoded, in names and values alike. So `q=blue+widget`
    /// and `q=blue%20widget` are the same search, and a literal `+` is sent as `%2B`. A parameter
    /// without `=` has the empty value. A value whose escapes do not decode (a stray `%`, bytes
    /// that are not UTF-8) is kept as sent, its `+` still a space, and the route's own rules
    /// judge it.
    func formValue(_ name: String) -> String? {
        guard let query, !query.isEmpty else { return nil }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: "=")
            let rawName = pair[..<(equals ?? pair.endIndex)]
            guard rawName == name || Self.formDecoded(rawName) == name else { continue }
            guard let equals else { return "" }
            return Self.formDecoded(pair[pair.index(after: equals)...])
        }
        return nil
    }

    /// One name or value of a form-encoded query: `+` to a space, then the percent escapes.
    static func formDecoded(_ raw: Substring) -> String {
        guard raw.contains(where: { $0 == "+" || $0 == "%" }) else { return String(raw) }
        let spaced = raw.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
