import Foundation
import StockroomCore

/// Items, drafts and routes the Core and Wire tests share.

public enum Fixture {
    /// 2026-11-22T06:00:00.123Z
    public static let t0 = Timestamp.date(milliseconds: 1_795_327_200_123)

    public static let keyboardID = ItemID("6f1c2e4a-1111-4000-8000-000000000001")!
    public static let mouseID = ItemID("6f1c2e4a-2222-4000-8000-000000000002")!
    public static let missingID = ItemID("6f1c2e4a-3333-4000-8000-000000000003")!

    /// "Keyboard", version 1, 3 in stock, no colour.
    public static let keyboard = Item(
        id: keyboardID, name: "Keyboard", color: nil, status: .inStock(quantity: 3),
        version: 1, createdAt: t0, updatedAt: t0
    )
    /// "Mouse", version 4, back-ordered, graphite.
    public static let mouse = Item(
        id: mouseID, name: "Mouse", color: Color(name: "Graphite", red: 0.2, green: 0.2, blue: 0.25),
        status: .outOfStock(isOnBackOrder: true), version: 4, createdAt: t0, updatedAt: t0
    )
    /// The live items of the store; `missingID` is not among them.
    public static let live: [ItemID: Item] = [keyboardID: keyboard, mouseID: mouse]

    /// A valid draft as typed in the episode of the brief.
    public static let typed = Draft(name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000))
    public static let typedValid = try! ValidDraft(typed)
    /// Another valid draft, with a name that needs trimming.
    public static let other = Draft(
        name: "  Mechanical Keyboard \n", color: Color(name: "Black", red: 0, green: 0, blue: 0),
        status: .outOfStock(isOnBackOrder: false)
    )
    /// An invalid draft: whitespace-only name.
    public static let invalid = Draft(name: "   ", color: nil, status: .inStock(quantity: 1))

    public static let keyboardRoute = Route.item(id: keyboardID)
    public static let mouseRoute = Route.item(id: mouseID)

    /// Every case name of `Command`, as the wire writes them.
    public static let allCommandCaseNames: Set<String> = [
        "selectTab", "push", "pop", "popToRoot", "openAdd", "openEdit", "openDuplicate",
        "openDeleteAlert", "updateDraft", "save", "cancel", "confirmDelete", "restore",
        "resolveConflict", "setCheckpoint", "returnToCheckpoint", "openURL",
    ]
}
