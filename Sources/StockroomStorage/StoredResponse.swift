import Foundation
import StockroomCore
import StockroomWire
import Synchronization

/// A decided response kept for retries of the same request.
public struct StoredResponse: Hashable, Sendable {
    /// HTTP status.
    public var status: Int
    /// Response headers worth replaying (ETag, Location, Content-Type).
    public var headers: [String: String]
    /// Response body.
    public var body: Data

    /// Creates a stored response.
    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
