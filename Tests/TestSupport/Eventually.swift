import Testing

/// Re-checks `condition` every `interval` until it holds. Past `timeout` it records an issue
/// naming `what` and throws, so that a bug fails the test instead of hanging the run.
/// For state the test cannot be told about (another process, a server's counters); where a
/// change can be observed, wait for it instead.
public func eventually(
    _ what: String, timeout: Duration = .seconds(60), interval: Duration = .milliseconds(5),
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out after \(timeout) waiting until \(what)", sourceLocation: sourceLocation)
            throw TimedOut(what: what)
        }
        try await Task.sleep(for: interval)
    }
}

public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out waiting until \(what)" }
}
