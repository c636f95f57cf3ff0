import Foundation
import StockroomCore
import Testing

/// Stored text is compared code point by code point: String's `==` takes canonically equivalent
/// spellings for one, and a write of the other spelling would pass for no change.
@Suite struct ExactTextEqualityTests {
    @Test func draftsColoursAndItemsOfCanonicallyEquivalentTextDiffer() {
        #expect("caf\u{E9}" == "cafe\u{301}", "String's own ==, which these must not follow")
        let composed = Draft(name: "caf\u{E9}", color: Color(name: "\u{212B}", red: 0, green: 0, blue: 1), status: .inStock(quantity: 1))
        var decomposed = composed
        decomposed.name = "cafe\u{301}"
        #expect(composed != decomposed)
        var otherColour = composed
        otherColour.color?.name = "\u{C5}"
        #expect(composed != otherColour)
        #expect(composed == Draft(name: "caf\u{E9}", color: Color(name: "\u{212B}", red: 0, green: 0, blue: 1), status: .inStock(quantity: 1)))
        let item = Item(id: .random(), name: "caf\u{E9}", color: nil, status: .inStock(quantity: 1), version: 1, createdAt: Date(), updatedAt: Date())
        var renamed = item
        renamed.name = "cafe\u{301}"
        #expect(item != renamed && item == item)
        // Equal values hash alike (String's hash is canonical, so exact equality keeps it valid).
        #expect(Set([composed, composed]).count == 1 && Set([composed, decomposed]).count == 2)
    }
}
