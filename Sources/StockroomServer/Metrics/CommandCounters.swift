import Metrics
import Synchronization

/// `stockroom_commands_total{command, outcome}`: each counter made on its first use and kept, so
/// that a command costs a dictionary lookup, not a metrics-factory registration.
final class CommandCounters: Sendable {
    private struct Key: Hashable {
        let command: String
        let outcome: String
    }

    private let counters = Mutex<[Key: Counter]>([:])

    func increment(command: String, outcome: String) {
        let counter = counters.withLock { counters in
            let key = Key(command: command, outcome: outcome)
            if let counter = counters[key] { return counter }
            let counter = Counter(label: "stockroom_commands_total", dimensions: [("command", command), ("outcome", outcome)])
            counters[key] = counter
            return counter
        }
        counter.increment()
    }
}
