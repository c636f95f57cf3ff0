import Foundation
import Testing
@testable import StockroomCore
import TestSupport

@Suite("Repair on delete")
struct RepairTests {
    struct RepairCase: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let before: NavigationState
        let after: NavigationState
    }

    static let k = Fixture.keyboardRoute
    static let m = Fixture.mouseRoute

    static let cases: [RepairCase] = [
        RepairCase(
            testDescription: "path loses every entry for the item",
            before: NavigationState(tab: .settings, path: [k, m, k, m], destination: nil),
            after: NavigationState(tab: .settings, path: [m, m], destination: nil)
        ),
        RepairCase(
            testDescription: "a deleteAlert for the item closes",
            before: NavigationState(path: [m, k], destination: .deleteAlert(for: Fixture.keyboard)),
            after: NavigationState(path: [m], destination: nil)
        ),
        RepairCase(
            testDescription: "an edit of the item stays open, draft kept",
            before: NavigationState(path: [k], destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed)),
            after: NavigationState(path: [], destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed))
        ),
        RepairCase(
            testDescription: "a duplicate of the item stays open, draft kept",
            before: NavigationState(path: [k], destination: .duplicate(itemID: Fixture.keyboardID, draft: Fixture.typed)),
            after: NavigationState(path: [], destination: .duplicate(itemID: Fixture.keyboardID, draft: Fixture.typed))
        ),
        RepairCase(
            testDescription: "an add sheet is left alone",
            before: NavigationState(path: [k], destination: .add(draft: Fixture.typed)),
            after: NavigationState(path: [], destination: .add(draft: Fixture.typed))
        ),
        RepairCase(
            testDescription: "a deleteAlert for another item is left alone",
            before: NavigationState(path: [k, m], destination: .deleteAlert(for: Fixture.mouse)),
            after: NavigationState(path: [m], destination: .deleteAlert(for: Fixture.mouse))
        ),
        RepairCase(
            testDescription: "an edit of another item is left alone",
            before: NavigationState(path: [m], destination: .edit(itemID: Fixture.mouseID, baseVersion: 4, draft: Fixture.other)),
            after: NavigationState(path: [m], destination: .edit(itemID: Fixture.mouseID, baseVersion: 4, draft: Fixture.other))
        ),
        RepairCase(
            testDescription: "a state that does not mention the item is unchanged",
            before: NavigationState(tab: .settings, path: [m], destination: .duplicate(itemID: Fixture.mouseID, draft: Fixture.other)),
            after: NavigationState(tab: .settings, path: [m], destination: .duplicate(itemID: Fixture.mouseID, draft: Fixture.other))
        ),
        RepairCase(testDescription: "root is unchanged", before: .root, after: .root),
    ]

    @Test("repaired(afterDeleting: keyboard)", arguments: cases)
    func repair(_ c: RepairCase) {
        #expect(c.before.repaired(afterDeleting: Fixture.keyboardID) == c.after)
    }

    @Test("repair is idempotent")
    func idempotent() {
        for c in Self.cases {
            let once = c.before.repaired(afterDeleting: Fixture.keyboardID)
            #expect(once.repaired(afterDeleting: Fixture.keyboardID) == once)
        }
    }

    @Test("after a repair, a kept edit answers save with itemDeleted")
    func keptEditSavesAsDeleted() {
        let before = NavigationState(path: [Self.k], destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed))
        let after = before.repaired(afterDeleting: Fixture.keyboardID)
        let live: [ItemID: Item] = [Fixture.mouseID: Fixture.mouse]
        #expect(decide(.save(), on: after, live: live) == .failure(.itemDeleted(Fixture.keyboardID)))
        #expect(decide(.updateDraft(draft: Fixture.other), on: after, live: live)
            == .success(Transition(state: NavigationState(destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.other)))))
        #expect(decide(.cancel, on: after, live: live) == .success(Transition(state: .root)))
    }
}

extension Item {
    func with(_ change: (inout Item) -> Void) -> Item {
        var copy = self
        change(&copy)
        return copy
    }
}

extension Result where Failure == DomainError {
    var errorCode: String? {
        if case .failure(let error) = self { error.code } else { nil }
    }
}
