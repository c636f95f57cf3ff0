import Configuration

/// A setting with a value that cannot be used.
public struct SettingsError: Error, CustomStringConvertible {
    /// What is wrong: the setting, its environment variable, the value and what is expected.
    public var description: String
    init(_ description: String) { self.description = description }

    init(key: String, value: String, expected: String) {
        self.init("invalid setting \(key) (environment variable \(SettingReader.environmentName(key))): \(value); expected \(expected)")
    }

    /// A value of `file`, the config file, of the wrong JSON type.
    init(key: String, file: String, value: String, expected: String) {
        self.init("invalid setting \(key) (config file \(file)): \(value); expected \(expected)")
    }
}

/// Reads settings strictly: a missing value takes the default, a present value must parse and lie in range.
struct SettingReader {
    let reader: ConfigReader
    /// The JSON types of the config file's values, when there is a file.
    let fileTypes: ConfigFileTypes?

    init(_ reader: ConfigReader, fileTypes: ConfigFileTypes? = nil) {
        self.reader = reader
        self.fileTypes = fileTypes
    }

    /// Refuses the config file's value for `key` when its JSON type is not among `accepted`
    /// (`ConfigFileTypes` says why the provider's reading cannot tell): checked whether or not a
    /// flag or the environment overrides it, since the file is wrong either way.
    private func checkFileType(_ key: String, accepted: Set<ConfigFileTypes.Kind>, expected: String) throws {
        guard let fileTypes, let (kind, text) = fileTypes.value(key), kind != .null, !accepted.contains(kind) else { return }
        throw SettingsError(key: key, file: fileTypes.file, value: text, expected: expected)
    }

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
        try checkFileType(key, accepted: [.number], expected: expected)
        guard let number = reader.int(forKey: ConfigKey(key)) else {
            if let given = given(key) { throw SettingsError(key: key, value: given, expected: expected) }
            return value
        }
        guard range.contains(number) else { throw SettingsError(key: key, value: "\(number)", expected: expected) }
        return number
    }

    func bool(_ key: String, default value: Bool) throws -> Bool {
        try checkFileType(key, accepted: [.bool], expected: "true or false")
        if let flag = reader.bool(forKey: ConfigKey(key)) { return flag }
        if let given = given(key) { throw SettingsError(key: key, value: given, expected: "true or false") }
        return value
    }

    func string(_ key: String, default value: String, expected: String, isValid: (String) -> Bool) throws -> String {
        try checkFileType(key, accepted: [.string], expected: expected)
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
        try checkFileType(key, accepted: [.string], expected: expected)
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

