import Foundation

/// Thrown when a replay is asked for the value of a fresh run (`Replayable.value`).
public struct ReplayedResponse: Error, Sendable {
    /// The first run's stored response.
    public var response: StoredResponse
}
