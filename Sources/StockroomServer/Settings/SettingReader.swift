import Configuration

/// A setting with a value that cannot be used.
public struct SettingsError: Error, CustomStringConvertible {
    /// What is wrong: the setting, where its value came from, the value and what is expected.
    public var description: String
    init(_ description: String) { self.description = description }

    /// A value of `key` from `origin` ("flag --http-port", "environment variable HTTP_PORT").
    init(key: String, origin: String, value: String, expected: String) {
        self.init("invalid setting \(key) (\(origin)): \(value); expected \(expected)")
    }

    /// A value of `file`, the config file, of the wrong JSON type.
    init(key: String, file: String, value: String, expected: String) {
        self.init("invalid setting \(key) (config file \(file)): \(value); expected \(expected)")
    }

    /// A key of `file`, the config file, that is no setting; `nearest` is the setting it most
    /// likely meant, if one is close.
    init(unknownKey key: String, file: String, nearest: String?) {
        self.init("unknown setting \(key) (config file \(file))" + (nearest.map { "; did you mean \($0)?" } ?? ""))
    }
}

/// One provider of the settings' `ConfigReader`, read alone, so that an error can say where a value
/// it refuses came from.
public struct SettingOrigin: Sendable {
    let reader: ConfigReader
    /// How the provider names a setting's key, as an error message says it.
    let name: @Sendable (_ key: String) -> String

    public init(_ provider: some ConfigProvider, name: @escaping @Sendable (_ key: String) -> String) {
        reader = ConfigReader(provider: provider)
        self.name = name
    }

    /// The command's flags: `http.port` is `--http-port`.
    public static func flags(_ provider: some ConfigProvider) -> SettingOrigin {
        SettingOrigin(provider) { key in "flag " + SettingReader.flagName(key) }
    }

    /// The process's environment: `http.port` is `HTTP_PORT`.
    public static func environment(_ provider: some ConfigProvider) -> SettingOrigin {
        SettingOrigin(provider) { key in "environment variable " + SettingReader.environmentName(key) }
    }

    /// The config file at `path`.
    public static func file(_ provider: some ConfigProvider, path: String) -> SettingOrigin {
        SettingOrigin(provider) { _ in "config file \(path)" }
    }
}

/// Reads settings strictly: a missing value takes the default, a present value must parse and lie in range.
struct SettingReader {
    let reader: ConfigReader
    /// The JSON types of the config file's values, when there is a file.
    let fileTypes: ConfigFileTypes?
    /// The reader's providers in its order, each alone; empty: a refused value is named by its
    /// environment variable.
    let origins: [SettingOrigin]
    /// Every key read so far: the settings there are, for `refuseUnknownFileKeys`.
    private let keysRead = KeysRead()

    /// The keys a reader and its copies have read (the sections' readers share one).
    private final class KeysRead {
        var keys: Set<String> = []
    }

    init(_ reader: ConfigReader, fileTypes: ConfigFileTypes? = nil, origins: [SettingOrigin] = []) {
        self.reader = reader
        self.fileTypes = fileTypes
        self.origins = origins
    }

    /// The error for the value `key` has, named by where it came from: the first of `origins` that
    /// has a value for it (the one the reader took).
    func invalid(_ key: String, value: String, expected: String) -> SettingsError {
        let origin = origins.first { Self.given(key, in: $0.reader) != nil }
        return SettingsError(
            key: key, origin: origin?.name(key) ?? "environment variable \(Self.environmentName(key))", value: value, expected: expected)
    }

    /// Notes that `key` is a setting (every reading of a setting calls this, before it reads).
    func note(_ key: String) {
        keysRead.keys.insert(key)
    }

    /// Refuses a key of the config file that no setting read: a misspelt one (`"htpp"`,
    /// `"maxEntires"`) would otherwise leave its setting at the default without a word. An
    /// object is a setting's section when some setting's key starts with its key.
    func refuseUnknownFileKeys() throws {
        guard let fileTypes else { return }
        let known = keysRead.keys
        let sections = Set(known.flatMap { key in
            let parts = key.split(separator: ".")
            return parts.indices.dropLast().map { parts[...$0].joined(separator: ".") }
        })
        for key in fileTypes.keys.sorted() {
            guard let (kind, text) = fileTypes.value(key) else { continue }
            if kind == .object ? sections.contains(key) : known.contains(key) { continue }
            if sections.contains(key) {
                throw SettingsError(key: key, file: fileTypes.file, value: text, expected: "an object of \(key).* settings")
            }
            throw SettingsError(unknownKey: key, file: fileTypes.file, nearest: Self.nearest(to: key, among: kind == .object ? sections : known))
        }
    }

    /// The candidate `key` most likely misspells: the one fewest edits away (a letter added,
    /// removed or changed, or two neighbours swapped; case ignored), if that is at most a third of
    /// the key's length.
    static func nearest(to key: String, among candidates: Set<String>) -> String? {
        let word = Array(key.lowercased())
        var best: (distance: Int, key: String)?
        for candidate in candidates.sorted() {
            let distance = editDistance(word, Array(candidate.lowercased()))
            if distance <= max(1, word.count / 3), distance < (best?.distance ?? .max) { best = (distance, candidate) }
        }
        return best?.key
    }

    /// The optimal string alignment distance between `a` and `b`.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        var d = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in stride(from: 1, through: a.count, by: 1) {
            for j in stride(from: 1, through: b.count, by: 1) {
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }

    /// Refuses the config file's value for `key` when its JSON type is not among `accepted`
    /// (`ConfigFileTypes` says why the provider's reading cannot tell): checked whether or not a
    /// flag or the environment overrides it, since the file is wrong either way.
    func checkFileType(_ key: String, accepted: Set<ConfigFileTypes.Kind>, expected: String) throws {
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

    /// The command-line flag of `key`: `http.port` -> `--http-port`, `db.busyTimeoutSeconds` ->
    /// `--db-busy-timeout-seconds`.
    static func flagName(_ key: String) -> String {
        "--" + environmentName(key).lowercased().replacingOccurrences(of: "_", with: "-")
    }

    /// The value as given, for an error message; nil when no provider has one.
    func given(_ key: String) -> String? {
        Self.given(key, in: reader)
    }

    /// The value `reader` has for `key`, as an error message shows it; nil when it has none.
    static func given(_ key: String, in reader: ConfigReader) -> String? {
        let key = ConfigKey(key)
        if let string = reader.string(forKey: key) { return "\"\(string)\"" }
        if let int = reader.int(forKey: key) { return "\(int)" }
        if let double = reader.double(forKey: key) { return "\(double)" }
        if let bool = reader.bool(forKey: key) { return "\(bool)" }
        if reader.stringArray(forKey: key) != nil { return "a list" }
        return nil
    }

    func int(_ key: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        note(key)
        let expected = "an integer from \(range.lowerBound) to \(range.upperBound)"
        try checkFileType(key, accepted: [.number], expected: expected)
        guard let number = reader.int(forKey: ConfigKey(key)) else {
            if let given = given(key) { throw invalid(key, value: given, expected: expected) }
            return value
        }
        guard range.contains(number) else { throw invalid(key, value: "\(number)", expected: expected) }
        return number
    }

    func bool(_ key: String, default value: Bool) throws -> Bool {
        note(key)
        try checkFileType(key, accepted: [.bool], expected: "true or false")
        if let flag = reader.bool(forKey: ConfigKey(key)) { return flag }
        if let given = given(key) { throw invalid(key, value: given, expected: "true or false") }
        return value
    }

    func string(_ key: String, default value: String, expected: String, isValid: (String) -> Bool) throws -> String {
        note(key)
        try checkFileType(key, accepted: [.string], expected: expected)
        guard let text = reader.string(forKey: ConfigKey(key)) else {
            if let given = given(key) { throw invalid(key, value: given, expected: expected) }
            return value
        }
        guard isValid(text) else { throw invalid(key, value: "\"\(text)\"", expected: expected) }
        return text
    }

    /// One of `choices`, by name, case-insensitively.
    func choice<Value>(_ key: String, default value: Value, among choices: [(String, Value)]) throws -> Value {
        note(key)
        let expected = "one of " + choices.map(\.0).joined(separator: ", ")
        try checkFileType(key, accepted: [.string], expected: expected)
        guard let text = reader.string(forKey: ConfigKey(key)) else {
            if let given = given(key) { throw invalid(key, value: given, expected: expected) }
            return value
        }
        guard let match = choices.first(where: { $0.0 == text.lowercased() }) else {
            throw invalid(key, value: "\"\(text)\"", expected: expected)
        }
        return match.1
    }
}

