/// Text the server renders, as data: a client localizes it by `key` and `args`, or shows `text`,
/// the English rendering.
public struct TextState: Hashable, Sendable {
    /// What the text says, for a client's string table: `"deleteItem.title"`.
    public var key: String
    /// The values the text names, in order: `["Keyboard"]`.
    public var args: [String]
    /// The English rendering.
    public var text: String

    /// Creates a text.
    public init(key: String, args: [String] = [], text: String) {
        self.key = key
        self.args = args
        self.text = text
    }
}
