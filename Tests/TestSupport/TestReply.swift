import Foundation
import StockroomStorage
import StockroomWire

/// A stored answer as the idempotency tests render one, roughly as the HTTP layer does: the store
/// keeps its bytes and never reads them.
public struct TestReply: Hashable, Sendable {
    public let status: Int
    public let headers: [String: String]
    public let body: Data

    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Reads back the bytes `stored` wrote.
    public init(_ stored: StoredResponse) throws {
        let parts = try JSONDecoder().decode([String].self, from: Data(stored.bytes))
        status = Int(parts[0]) ?? 0
        headers = try JSONDecoder().decode([String: String].self, from: Data(parts[1].utf8))
        body = Data(parts[2].utf8)
    }

    public var stored: StoredResponse {
        let headersJSON = String(decoding: try! JSONEncoder().encode(headers), as: UTF8.self)
        return StoredResponse(bytes: Array(try! JSONEncoder().encode(["\(status)", headersJSON, String(decoding: body, as: UTF8.self)])))
    }

    /// Decided outcomes are stored (201, 422, 409), others are not.
    public static func render<Value: Encodable>(_ result: Result<Value, any Error>) -> StoredResponse? {
        switch result {
        case .success(let value):
            let body = (try? JSONCoding.encoder().encode(value)) ?? Data()
            return TestReply(status: 201, headers: ["Content-Type": "application/json"], body: body).stored
        case .failure(StoreError.domain(let error)):
            return TestReply(status: 422, headers: [:], body: Data(error.code.utf8)).stored
        case .failure(StoreError.alreadyExists):
            return TestReply(status: 409, headers: [:], body: Data("alreadyExists".utf8)).stored
        case .failure:
            return nil
        }
    }
}
