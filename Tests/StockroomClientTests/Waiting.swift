import Observation
import StockroomClient
import TestSupport
import Testing

/// Waits until `condition` holds for the store, re-checking whenever something it read changes
/// (Observation), not on a timer. Fails the test after `timeout`, so that a bug cannot hang the run.
@MainActor
func waitUntil(
    _ store: SyncedStore, timeout: Duration = .seconds(60), _ what: String = "condition",
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: @escaping @MainActor (SyncedStore) -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while true {
        let (changes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let holds = withObservationTracking {
            condition(store)
        } onChange: {
            continuation.yield()
        }
        if holds { return }
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else {
            Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
            throw TimedOut(what: what)
        }
        // Woken by the change, or by the deadline.
        let timer = Task {
            try? await Task.sleep(for: remaining)
            continuation.yield()
        }
        var iterator = changes.makeAsyncIterator()
        _ = await iterator.next()
        timer.cancel()
    }
}
