import Foundation
@testable import StockroomClient
import Testing

/// `ItemsByID` (the store's `itemsByID`) against a dictionary of the same items: every insert,
/// replacement and removal in a random sequence leaves both holding the same items.
@Suite("The store's items by id")
struct ItemsByIDTests {
    func item(_ id: ItemID, version: Int) -> Item {
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        return Item(
            id: id, name: "Item \(version)", color: nil, status: .inStock(quantity: version), version: version, createdAt: date,
            updatedAt: date)
    }

    func expectSame(_ table: ItemsByID, _ model: [ItemID: Item], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(table.count == model.count, sourceLocation: sourceLocation)
        #expect(table.isEmpty == model.isEmpty, sourceLocation: sourceLocation)
        #expect(Set(table.keys) == Set(model.keys), sourceLocation: sourceLocation)
        #expect(Array(table.keys) == table.values.map(\.id), "keys in the order of values", sourceLocation: sourceLocation)
        #expect(model.allSatisfy { table[$0.key] == $0.value && table.contains($0.key) }, sourceLocation: sourceLocation)
        #expect(table.allSatisfy { model[$0.key] == $0.value && $0.value.id == $0.key }, sourceLocation: sourceLocation)
        #expect(table == ItemsByID(model.values), "equal whatever the order", sourceLocation: sourceLocation)
    }

    /// With few ids (one chunk of items) and with more than a chunk's worth (removals move items
    /// across chunks, and the last chunk empties and fills again).
    @Test(arguments: [40, 9_000])
    func aRandomSequenceOfWritesHoldsWhatADictionaryHolds(ids count: Int) {
        var random = SystemRandomNumberGenerator()
        let ids = (0..<count).map { _ in ItemID.random() }
        var table = ItemsByID()
        var model: [ItemID: Item] = [:]
        for id in ids.prefix(count * 3 / 4) {
            table[id] = item(id, version: 0)
            model[id] = item(id, version: 0)
        }
        expectSame(table, model)
        let steps = 4 * count + 2_000
        for step in 0..<steps {
            let id = ids.randomElement(using: &random)!
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                #expect(table.remove(id) == (model.removeValue(forKey: id) != nil))
            case 1:
                table[id] = nil
                model[id] = nil
            case 2:
                let new = item(id, version: step)
                table[id] = new
                model[id] = new
            default:
                // Only a newer version replaces.
                let version = Int.random(in: 0..<steps, using: &random)
                let new = item(id, version: version)
                let known = model[id]
                let (put, isNew) = table.upsert(new) { $0.version < version }
                #expect(isNew == (known == nil))
                #expect(put == (known.map { $0.version < version } ?? true))
                if put { model[id] = new }
            }
            if step % (steps / 20) == 0 { expectSame(table, model) }
        }
        expectSame(table, model)
        for id in ids { table[id] = nil }
        #expect(table.isEmpty && table.values.isEmpty)
    }

    @Test func theLastOfTwoWithOneIDIsKeptAndRoomIsMade() {
        let id = ItemID.random()
        let table = ItemsByID([item(id, version: 1), item(id, version: 2)])
        #expect(table.count == 1 && table[id]?.version == 2)
        var empty = ItemsByID()
        empty.reserveCapacity(1_000)
        #expect(empty.capacity >= 1_000 && empty.isEmpty)
        #expect(empty != table && ItemsByID() == ItemsByID([]))
    }
}
