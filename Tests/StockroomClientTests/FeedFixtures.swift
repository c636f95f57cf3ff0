import Foundation
@testable import StockroomClient

/// A client of a port where nothing listens: for a store fed by hand and never started.
let nowhereClient = StockroomClient(baseURL: URL(string: "http://127.0.0.1:9")!, token: "sr_none")

/// What the suites that feed a store by hand share: the client, one time, and builders of items
/// and of the feed's changes.
protocol FeedFixtures {}

extension FeedFixtures {
    var nowhere: StockroomClient { nowhereClient }
    var at: Date { Date(timeIntervalSince1970: 1_790_000_000) }

    /// An item in stock, created `offset` seconds after `at`.
    func item(_ name: String, id: ItemID, version: Int, createdAt offset: Double = 0) -> Item {
        Item(id: id, name: name, color: nil, status: .inStock(quantity: 1), version: version, createdAt: at + offset, updatedAt: at)
    }

    /// The feed's upsert of `value` at position `seq`.
    func change(_ seq: Int, _ value: Change.Value, origin: Change.Origin = .init(clientID: nil, idempotencyKey: nil)) -> Change {
        let (entity, id): (Change.Entity, String) =
            switch value {
            case .item(let item): (.item, item.id.description)
            case .navigation(let navigation): (.navigation, navigation.clientID.rawValue)
            case .presence(let presence): (.presence, presence.clientID.rawValue)
            }
        return Change(seq: seq, cursor: FeedCursor(epoch: "e1", seq: Int64(seq)), entity: entity, operation: .upsert, id: id, value: value, origin: origin, at: at)
    }

    /// The feed's deletion of item `id` at position `seq`.
    func deletion(_ seq: Int, of id: ItemID) -> Change {
        Change(
            seq: seq, cursor: FeedCursor(epoch: "e1", seq: Int64(seq)), entity: .item, operation: .delete, id: id.description, value: nil,
            origin: .init(clientID: nil, idempotencyKey: nil), at: at)
    }
}
