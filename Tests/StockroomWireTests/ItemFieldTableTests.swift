import Foundation
import StockroomCore
import StockroomWire
import TestSupport
import Testing

/// The table of item fields (`ItemFields`) against the types, and through every encoding an item
/// or a draft crosses in Wire: the JSON writer, `Codable`, and the fast scanner.
@Suite("Item fields: the table and the wire")
struct ItemFieldTableTests {
    @Test func theTableNamesEveryFieldOfTheTypes() {
        let item = Item(id: .random(), name: "x", color: Color(name: "c", red: 0, green: 0, blue: 0), status: .inStock(quantity: 1),
                        version: 1, createdAt: Fixture.t0, updatedAt: Fixture.t0)
        #expect(ItemFields.properties(of: item) == ItemFields.item, "a field of Item is missing from ItemFields.item")
        #expect(ItemFields.properties(of: item.draft) == ItemFields.draft, "a field of Draft is missing from ItemFields.draft")
        #expect(ItemFields.properties(of: item.color!) == ItemFields.color, "a field of Color is missing from ItemFields.color")
        // Every status case and value of the table is in some draft, and the drafts use no other.
        let shapes = ItemFields.drafts.map { ItemFields.shape(of: $0.status) }
        #expect(Set(shapes.map(\.name)) == Set(ItemFields.status.keys))
        for shape in shapes { #expect(ItemFields.status[shape.name] == shape.labels, "\(shape.name)'s values") }
        // Each draft is valid and distinct in every field the table lists.
        for draft in ItemFields.drafts { #expect(throws: Never.self) { try ValidDraft(draft) } }
        #expect(Set(ItemFields.drafts.map(\.name)).count == ItemFields.drafts.count)
        #expect(Set(ItemFields.drafts.map(\.color)).count == ItemFields.drafts.count)
        #expect(Set(ItemFields.drafts.map(\.status)).count == ItemFields.drafts.count)
    }

    static func item(_ draft: Draft) -> Item {
        Item(id: .random(), name: draft.name, color: draft.color, status: draft.status, version: 7, createdAt: Fixture.t0,
             updatedAt: Fixture.t0.addingTimeInterval(1.5))
    }

    @Test(arguments: ItemFields.drafts)
    func anItemCrossesTheWriterAndCodable(draft: Draft) throws {
        let item = Self.item(draft)
        let written = Data(item.jsonBytes)
        #expect(try JSONCoding.decoder().decode(Item.self, from: written) == item)
        let encoded = try JSONCoding.encoder().encode(item)
        #expect(try JSONCoding.decoder().decode(Item.self, from: encoded) == item)
        #expect(try JSON.parse(written) == JSON.parse(encoded), "the writer and Codable write the same object")
        let body = try JSONCoding.encoder().encode(NewItemBody(id: item.id, draft: draft))
        #expect(try JSONCoding.decoder().decode(NewItemBody.self, from: body) == NewItemBody(id: item.id, draft: draft))
    }

    /// The fast scanner reads a draft whole or leaves it to `JSONDecoder` (nil: a name with
    /// escapes, for one); it never reads a different draft. Every draft of the table without an
    /// escape in its text is read by it, so each field is.
    @Test(arguments: ItemFields.drafts)
    func aDraftCrossesTheFastScanner(draft: Draft) throws {
        let plain = !"\(draft.name)\(draft.color?.name ?? "")".contains { $0 == "\"" || $0 == "\\" }
        for bytes in [Data(draft.jsonBytes), try JSONCoding.encoder().encode(draft)] {
            let fast = bytes.withUnsafeBytes { Draft(fastJSON: $0) }
            #expect(fast == draft || (fast == nil && !plain))
            #expect(try JSONCoding.decoder().decode(Draft.self, from: bytes) == draft)
        }
        let command = CommandRequestBody(command: .updateDraft(draft: draft))
        let request = try JSONCoding.encoder().encode(command)
        let fast = request.withUnsafeBytes { CommandRequestBody(fastJSON: $0) }
        #expect(fast == command || (fast == nil && !plain))
    }
}
