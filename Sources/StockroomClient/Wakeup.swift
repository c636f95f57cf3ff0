/// A one-slot wake-up for the delivery loop: `fire()` ends the current `wait`, or the next one at
/// once when nobody waits. Used on the main actor only.
@MainActor
final class Wakeup {
    private var continuation: CheckedContinuation<Void, Never>?
    private var fired = false
    private var generation = 0

    /// Waits until fired, the timeout passes, or the task is cancelled.
    func wait(timeout: Duration? = nil) async {
        if fired {
            fired = false
            return
        }
        generation += 1
        let current = generation
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume()
                    return
                }
                self.continuation = continuation
                if let timeout {
                    Task { [weak self] in
                        try? await Task.sleep(for: timeout)
                        self?.resume(generation: current)
                    }
                }
            }
        } onCancel: {
            Task { @MainActor [weak self] in self?.resume(generation: current) }
        }
    }

    /// Ends the current wait, or the next one.
    func fire() {
        if let continuation {
            self.continuation = nil
            continuation.resume()
        } else {
            fired = true
        }
    }

    private func resume(generation: Int) {
        guard generation == self.generation, let continuation else { return }
        self.continuation = nil
        continuation.resume()
    }
}
