import Foundation

/// What one user may hold in the store.
public struct StoreLimits: Sendable, Hashable {
    /// The most clients (devices, each with its own navigation state) one user may have.
    public var clientsPerUser: Int

    /// Creates limits.
    public init(clientsPerUser: Int = 1000) {
        self.clientsPerUser = clientsPerUser
    }
}
