import Logging

/// The warnings of a task that retries every round (a second, or less), so that an outage of
/// minutes is a few lines, not one a round: the first failure of a stretch is logged, then a
/// reminder at most every `reminderInterval` with the rounds failed since the stretch began, and
/// the end of the stretch once a round works again.
struct FailureStretch {
    static let reminderInterval: Duration = .seconds(60)

    /// What failed, for each line: "recording presence".
    let task: String
    private var failures = 0
    private var lastWarned: ContinuousClock.Instant?

    init(_ task: String) {
        self.task = task
    }

    mutating func failed(_ error: any Error, logger: Logger, now: ContinuousClock.Instant = .now) {
        failures += 1
        if let lastWarned, now - lastWarned < Self.reminderInterval { return }
        lastWarned = now
        let message: Logger.Message =
            failures == 1 ? "\(task) failed; retrying every round" : "\(task) still fails; retrying every round"
        logger.warning(message, metadata: ["error": "\(error)", "failedRounds": "\(failures)"])
    }

    mutating func succeeded(logger: Logger) {
        guard failures > 0 else { return }
        logger.info("\(task) works again", metadata: ["failedRounds": "\(failures)"])
        failures = 0
        lastWarned = nil
    }
}
