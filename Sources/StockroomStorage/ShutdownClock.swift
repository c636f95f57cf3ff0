import Synchronization

/// When the process's shutdown began, for the writes that could outlast it: an import applies
/// thousands of rows in one transaction, which nothing can cancel once it runs. An import gives up
/// `importGrace` after the shutdown began, rolled back and answered `503`, so that no import holds
/// the server past its graceful bound (`stockroom serve`: 3 s), past which the process would end
/// it unanswered (its rows committed or not, the client could not tell). An import that ends
/// within the grace is applied and answered as any other write in flight.
public final class ShutdownClock: Sendable {
    public static let importGrace: Duration = .seconds(2)

    private let begun = Atomic<Bool>(false)
    private let began = Mutex<ContinuousClock.Instant?>(nil)

    public init() {}

    /// Whether shutdown has begun (one atomic load).
    public var hasBegun: Bool { begun.load(ordering: .relaxed) }

    /// Shutdown began at `instant` (the first call counts).
    public func begin(at instant: ContinuousClock.Instant) {
        began.withLock { began in
            if began == nil { began = instant }
        }
        begun.store(true, ordering: .relaxed)
    }

    /// Throws `unavailable` once an import must give up. Before shutdown: one atomic load.
    public func checkImport() throws {
        guard hasBegun, let began = began.withLock({ $0 }), ContinuousClock.now - began >= Self.importGrace else { return }
        throw StoreError.unavailable("the server is shutting down: nothing of this import was applied; send it again")
    }
}
