import Configuration

/// A setting with a value that cannot be used.
public struct SettingsError: Error, CustomStringConvertible {
    /// What is wrong: the setting, its environment variable, the value and what is expected.
    public var description: String
    init(_ description: String) { self.description = description }

    init(key: String, value: String, expected: String) {
        self.init("invalid setting \(key) (environment variable \(SettingReader.environmentName(key))): \(value); expected \(expected)")
    }
}

/// Reads settings strictly: a missing value takes the default, a present value must parse and lie in range.
struct SettingReader {
    let reader: ConfigReader

    init(_ reader: ConfigReader) { self.reader = reader }

    /// The environment variable swift-configuration reads `key` from: `db.busyTimeoutSeconds` -> `DB_BUSY_TIMEOUT_SECONDS`.
    static func environmentName(_ key: String) -> String {
        key.split(separator: ".").map { part in
            var word = ""
            for character in part {
                if character.isUppercase, !word.isEmpty { word += "_" }
                word += character.uppercased()
            }
            return word
        }.joined(separator: "_")
    }

    /// The value as given, for an error message; nil when no provider has one.
    func given(_ key: String) -> String? {
        let key = ConfigKey(key)
        if let string = reader.string(forKey: key) { return "\"\(string)\"" }
        if let int = reader.int(forKey: key) { return "\(int)" }
        if let double = reader.double(forKey: key) { return "\(double)" }
        if let bool = reader.bool(forKey: key) { return "\(bool)" }
        if reader.stringArray(forKey: key) != nil { return "a list" }
        return nil
    }

    func int(_ key: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        let expected = "an integer from \(range.lowerBound) to \(range.upperBound)"
        guard let number = reader.int(forKey: ConfigKey(key)) else {
            if let given = given(key) { throw SettingsError(key: key, value: given, expected: expected) }
            return value
        }
        guard range.contains(number) else { throw SettingsError(key: key, value: "\(number)", expected: expected) }
        return number
    }

    func bool(_ key: String, default value: Bool) throws -> Bool {
        if let flag = reader.bool(forKey: ConfigKey(key)) { return flag }
        if let given = given(key) { throw SettingsError(key: key, value: given, expected: "true or false") }
        return value
    }

    func string(_ key: String, default value: String, expected: String, isValid: (String) -> Bool) throws -> String {
        guard let text = reader.string(forKey: ConfigKey(key)) else {
            if let given = given(key) { throw SettingsError(key: key, value: given, expected: expected) }
            return value
        }
        guard isValid(text) else { throw SettingsError(key: key, value: "\"\(text)\"", expected: expected) }
        return text
    }

    /// One of `choices`, by name, case-insensitively.
    func choice<Value>(_ key: String, default value: Value, among choices: [(String, Value)]) throws -> Value {
        let expected = "one of " + choices.map(\.0).joined(separator: ", ")
        guard let text = reader.string(forKey: ConfigKey(key)) else {
            if let given = given(key) { throw SettingsError(key: key, value: given, expected: expected) }
            return value
        }
        guard let match = choices.first(where: { $0.0 == text.lowercased() }) else {
            throw SettingsError(key: key, value: "\"\(text)\"", expected: expected)
        }
        return match.1
    }
}

