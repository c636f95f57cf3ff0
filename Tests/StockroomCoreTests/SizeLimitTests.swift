import Testing

@testable import StockroomCore

/// Bounded cost per value (issue #14, points 4 and 5): no draft, name or path larger than an item may hold.
@Suite("Size limits")
struct SizeLimitTests {
    static let item = Item(
        id: ItemID.random(), name: "Mug", color: nil, status: .inStock(quantity: 1), version: 1,
        createdAt: Timestamp.date(milliseconds: 0), updatedAt: Timestamp.date(milliseconds: 0))

    /// `e` plus 150,000 combining accents: one Character, 300,001 UTF-8 bytes.
    static let oneHugeCharacter = "e" + String(repeating: "\u{301}", count: 150_000)

    @Test func oneCharacterOfManyCombiningMarksIsRefusedByBytes() {
        #expect(Self.oneHugeCharacter.count == 1)
        #expect(throws: DomainError.self) { try ValidDraft(Draft(name: Self.oneHugeCharacter, color: nil, status: .inStock(quantity: 1))) }
        let colour = Color(name: "e" + String(repeating: "\u{301}", count: 100_000), red: 0, green: 0, blue: 0)
        #expect(throws: DomainError.self) { try ValidDraft(Draft(name: "Mug", color: colour, status: .inStock(quantity: 1))) }
    }

    @Test func theLargestAllowedNamesPass() throws {
        let name = String(repeating: "e" + String(repeating: "\u{301}", count: 20), count: 199)  // 8,159 bytes
        #expect(name.utf8.count <= ValidDraft.maxNameBytes)
        _ = try ValidDraft(Draft(name: name, color: nil, status: .inStock(quantity: 1)))
    }

    @Test(arguments: [String(repeating: "x", count: 1_000_000), oneHugeCharacter, String(repeating: "y", count: 201)])
    func updateDraftRefusesADraftLargerThanAnItem(name: String) {
        let state = NavigationState(destination: .add(draft: .blank))
        #expect(throws: DomainError.self) {
            try Transition.decide(.updateDraft(draft: Draft(name: name, color: nil, status: .inStock(quantity: 1))), on: state, items: [:])
        }
    }

    @Test func anInvalidButSmallDraftMayStillBeTyped() throws {
        let state = NavigationState(destination: .add(draft: .blank))
        let typed = Draft(name: "", color: nil, status: .inStock(quantity: -5))
        #expect(try Transition.decide(.updateDraft(draft: typed), on: state, items: [:]).state.destination == .add(draft: typed))
    }

    @Test func pushesStopAtTheMaximumPathDepth() throws {
        var state = NavigationState.root
        for _ in 0..<NavigationState.maxPathDepth {
            state = try Transition.decide(.push(route: .item(id: Self.item.id)), on: state, items: [Self.item.id: Self.item]).state
        }
        #expect(state.path.count == NavigationState.maxPathDepth)
        #expect(throws: DomainError.validationFailed(field: "path", message: "path may hold at most 32 routes")) {
            try Transition.decide(.push(route: .item(id: Self.item.id)), on: state, items: [Self.item.id: Self.item])
        }
        var deeper = state
        deeper.path.append(.item(id: Self.item.id))
        #expect(throws: DomainError.self) { try deeper.checkSize() }
        try state.checkSize()
    }
}
