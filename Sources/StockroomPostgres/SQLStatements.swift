/// Splits a migration file into its statements: postgres-nio sends each query as one prepared
/// statement (the extended protocol), which PostgreSQL refuses to hold several commands.
/// A `;` ends a statement unless it is inside a string ('…'), a quoted identifier ("…"), a
/// dollar-quoted body ($$…$$ or $tag$…$tag$) or a comment (-- to the end of the line, /* … */).
enum SQLStatements {
    static func split(_ sql: String) -> [String] {
        let text = Array(sql.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var index = 0

        func flush() {
            let statement = String(current).trimmingWhitespace
            if !statement.isEmpty { statements.append(statement) }
            current = String.UnicodeScalarView()
        }
        func starts(with prefix: [Unicode.Scalar], at position: Int) -> Bool {
            position + prefix.count <= text.count && Array(text[position..<position + prefix.count]) == prefix
        }

        while index < text.count {
            let scalar = text[index]
            switch scalar {
            case "-" where starts(with: ["-", "-"], at: index):
                // A line comment: dropped.
                while index < text.count, text[index] != "\n" { index += 1 }
            case "/" where starts(with: ["/", "*"], at: index):
                index += 2
                while index < text.count, !starts(with: ["*", "/"], at: index) { index += 1 }
                index = min(text.count, index + 2)
            case "'", "\"":
                // A string or quoted identifier; a doubled quote inside stays inside.
                current.append(scalar)
                index += 1
                while index < text.count {
                    current.append(text[index])
                    if text[index] == scalar {
                        if index + 1 < text.count, text[index + 1] == scalar {
                            current.append(text[index + 1])
                            index += 2
                            continue
                        }
                        index += 1
                        break
                    }
                    index += 1
                }
            case "$":
                // A dollar quote's tag: $$ or $name$ (letters, digits, underscores).
                var end = index + 1
                while end < text.count, text[end] == "_" || text[end].properties.isAlphabetic || ("0"..."9").contains(text[end]) {
                    end += 1
                }
                guard end < text.count, text[end] == "$" else {
                    current.append(scalar)
                    index += 1
                    continue
                }
                let tag = Array(text[index...end])
                current.append(contentsOf: tag)
                index = end + 1
                while index < text.count, !starts(with: tag, at: index) {
                    current.append(text[index])
                    index += 1
                }
                if index < text.count {
                    current.append(contentsOf: tag)
                    index += tag.count
                }
            case ";":
                flush()
                index += 1
            default:
                current.append(scalar)
                index += 1
            }
        }
        flush()
        return statements
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
