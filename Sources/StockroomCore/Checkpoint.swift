/// A named point in the navigation to return to (Navigator's checkpoints): a depth of the path
/// (0 = the root) and the value the last `returnToCheckpoint` handed back to the screen there.
public struct Checkpoint: Hashable, Sendable {
    /// How many routes the path holds at the checkpoint.
    public var depth: Int
    /// The value handed back by the last return to it, if any.
    public var value: JSONValue?

    /// Creates a checkpoint.
    public init(depth: Int, value: JSONValue? = nil) {
        self.depth = depth
        self.value = value
    }

    /// The most checkpoints one state may hold.
    public static let maxCount = 8
    /// The longest checkpoint name, in UTF-8 bytes.
    public static let maxNameBytes = 64
    /// The largest value, as compact JSON in UTF-8 bytes (the longest name a draft may hold).
    public static let maxValueBytes = ValidDraft.maxNameBytes

    /// `validationFailed` for a name that is empty, too long or holds a control character, naming
    /// `field`: a command's `name`, or a whole state's `checkpoints` (where the name is a key).
    public static func checkName(_ name: String, field: String = "name") throws(DomainError) {
        guard !name.isEmpty, name.utf8.count <= maxNameBytes else {
            throw .validationFailed(field: field, message: "a checkpoint name must be 1-\(maxNameBytes) UTF-8 bytes")
        }
        guard !TextRule.hasControlCharacter(name) else {
            throw .validationFailed(field: field, message: "a checkpoint name must not contain control characters (U+0000-U+001F, U+007F)")
        }
    }
}
