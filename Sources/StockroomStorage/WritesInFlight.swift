import Synchronization

/// How many write requests the server is handling: the server counts them (it knows which of its
/// requests write; reads and feed requests waiting for changes are not counted), and a store may
/// read the count as a hint. `AppDatabase` at synchronous=NORMAL applies a write on its caller's
/// thread only while it is the only one (see `GroupCommitter`).
public final class WritesInFlight: Sendable {
    private let value = Atomic<Int>(0)

    public init() {}

    /// A write request begins.
    public func enter() {
        value.add(1, ordering: .relaxed)
    }

    /// A write request has its answer.
    public func leave() {
        value.subtract(1, ordering: .relaxed)
    }

    /// The write requests in flight.
    public var count: Int { value.load(ordering: .relaxed) }
}
