/// What a decided request answered, kept for retries of the same request: bytes the server wrote
/// (`Reply.stored`) and reads back when it replays them. A store keeps them as they are.
public struct StoredResponse: Hashable, Sendable {
    /// The stored answer, opaque to the store.
    public var bytes: [UInt8]

    /// A stored answer of these bytes.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }
}
