import Foundation
import Testing
@testable import StockroomCore
import TestSupport

@Suite("Transition table")
struct TransitionTableTests {
    @Test("the table covers every Command case")
    func tableCoversEveryCommand() {
        #expect(Set(CommandCase.all.map { $0.command.name }) == Fixture.allCommandCaseNames)
        #expect(Start.all.count == 14)
    }

    @Test("every command against every destination and path", arguments: CommandCase.all, Start.all)
    func table(_ c: CommandCase, _ start: Start) {
        let actual = decide(c.command, on: start.state, live: c.live, restoreSource: c.restoreSource)
        #expect(actual == c.outcome(from: start.state))
        // A store skips the read that learns which items to lock when the command reads none.
        if !c.command.readsItems {
            #expect(c.command.itemsToLookUp(in: start.state).isEmpty)
        }
    }

    // MARK: invalidTransition

    @Test("save with nothing open", arguments: [
        NavigationState(),
        NavigationState(path: [Fixture.keyboardRoute]),
    ])
    func saveWithoutDraft(_ state: NavigationState) {
        #expect(decide(.save(), on: state) == fail(.invalidTransition("save needs an open add, edit or duplicate")))
        #expect(decide(.save(), on: state).errorCode == "invalidTransition")
    }

    @Test("while an alert is open, only its buttons' commands, cancel and the open commands are accepted", arguments: [
        NavigationState(path: [Fixture.keyboardRoute], destination: .deleteAlert(for: Fixture.keyboard)),
        NavigationState(destination: .deleteAlert(itemID: Fixture.missingID, alert: .deleteItem(name: nil))),
        NavigationState(path: [Fixture.keyboardRoute], destination: .conflict(
            itemID: Fixture.keyboardID, baseVersion: 0, draft: Fixture.typed, current: Fixture.keyboard)),
    ])
    func alertGate(_ state: NavigationState) {
        let refused: [Command] = [
            .save(), .save(onConflict: .alert), .pop, .popToRoot, .selectTab(tab: .settings), .push(route: Fixture.mouseRoute),
            .updateDraft(draft: Fixture.typed), .restore(fromClientID: "ipad"), .setCheckpoint(name: "a"),
            .returnToCheckpoint(name: "a"),
        ]
        for command in refused {
            let result = decide(command, on: state, restoreSource: .root)
            #expect(result == alertRefusal(command), "\(command.name)")
            #expect(result.errorCode == "invalidTransition")
        }
        for button in state.destination!.alert!.buttons {
            #expect(decide(button.command, on: state).errorCode != "invalidTransition" || button.command == .confirmDelete)
        }
        #expect(decide(.cancel, on: state) == ok(state.with { $0.destination = nil }))
        #expect((try? decide(.openAdd, on: state).get())?.state.destination == .add(draft: .blank))
        #expect((try? decide(.openURL(url: "stockroom://settings"), on: state).get())?.state == NavigationState(tab: .settings))
    }

    @Test("confirmDelete without the alert", arguments: [
        NavigationState(),
        NavigationState(destination: .add(draft: .blank)),
        NavigationState(destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed)),
        NavigationState(destination: .duplicate(itemID: Fixture.keyboardID, draft: Fixture.typed)),
    ])
    func confirmDeleteWithoutAlert(_ state: NavigationState) {
        #expect(decide(.confirmDelete, on: state) == fail(.invalidTransition("confirmDelete needs an open delete alert")))
    }

    @Test("pop on an empty path, whatever is open")
    func popOnEmptyPath() {
        for (_, destination) in Start.destinations where destination?.alert == nil {
            let state = NavigationState(tab: .settings, path: [], destination: destination)
            #expect(decide(.pop, on: state) == fail(.invalidTransition("pop needs a non-empty path")))
        }
    }

    @Test("updateDraft with nothing open", arguments: [
        NavigationState(),
        NavigationState(path: [Fixture.mouseRoute]),
    ])
    func updateDraftWithoutDraft(_ state: NavigationState) {
        #expect(decide(.updateDraft(draft: Fixture.typed), on: state)
            == fail(.invalidTransition("updateDraft needs an open add, edit or duplicate")))
    }

    // MARK: 404s

    @Test("opening or pushing a missing item is itemNotFound", arguments: [
        Command.push(route: .item(id: Fixture.missingID)),
        .openEdit(itemID: Fixture.missingID),
        .openDuplicate(itemID: Fixture.missingID),
        .openDeleteAlert(itemID: Fixture.missingID),
    ])
    func missingItem(_ command: Command) {
        for start in Start.all {
            let result = decide(command, on: start.state)
            if start.state.destination?.alert != nil, !command.opensDestination {
                #expect(result == alertRefusal(command), "\(start.name)")
                continue
            }
            #expect(result == fail(.itemNotFound(Fixture.missingID)), "\(start.name)")
            #expect(result.errorCode == "notFound")
        }
    }

    @Test("a deleted item counts as missing for open/push: absent from the map even if the store knew it")
    func deletedItemIsMissing() {
        let live: [ItemID: Item] = [Fixture.mouseID: Fixture.mouse]
        #expect(decide(.openEdit(itemID: Fixture.keyboardID), on: .root, live: live) == fail(.itemNotFound(Fixture.keyboardID)))
        #expect(decide(.push(route: Fixture.keyboardRoute), on: .root, live: live) == fail(.itemNotFound(Fixture.keyboardID)))
    }

    // MARK: save on edit: itemDeleted, conflict, validationFailed, in that order

    struct SaveEditCase: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let baseVersion: Int
        let draft: Draft
        let current: Item?
        let expected: Result<Transition, DomainError>
    }

    static let keyboardV2 = Fixture.keyboard.with { $0.version = 2; $0.name = "Keyboard (renamed elsewhere)" }
    static let emptyName = DomainError.validationFailed(field: "name", message: "name must not be empty")

    static let saveEditCases: [SaveEditCase] = [
        SaveEditCase(
            testDescription: "item live at baseVersion, valid draft: update",
            baseVersion: 1, draft: Fixture.typed, current: Fixture.keyboard,
            expected: ok(NavigationState(path: [Fixture.keyboardRoute]), .update(Fixture.keyboardID, Fixture.typedValid, expectedVersion: 1))
        ),
        SaveEditCase(
            testDescription: "item deleted: itemDeleted",
            baseVersion: 1, draft: Fixture.typed, current: nil,
            expected: fail(.itemDeleted(Fixture.keyboardID))
        ),
        SaveEditCase(
            testDescription: "item deleted and draft invalid: itemDeleted first",
            baseVersion: 1, draft: Fixture.invalid, current: nil,
            expected: fail(.itemDeleted(Fixture.keyboardID))
        ),
        SaveEditCase(
            testDescription: "item changed since baseVersion: conflict with current",
            baseVersion: 1, draft: Fixture.typed, current: keyboardV2,
            expected: fail(.conflict(current: keyboardV2))
        ),
        SaveEditCase(
            testDescription: "item changed and draft invalid: conflict first",
            baseVersion: 1, draft: Fixture.invalid, current: keyboardV2,
            expected: fail(.conflict(current: keyboardV2))
        ),
        SaveEditCase(
            testDescription: "baseVersion ahead of the item: still a conflict (versions differ)",
            baseVersion: 3, draft: Fixture.typed, current: keyboardV2,
            expected: fail(.conflict(current: keyboardV2))
        ),
        SaveEditCase(
            testDescription: "item unchanged, draft invalid: validationFailed",
            baseVersion: 1, draft: Fixture.invalid, current: Fixture.keyboard,
            expected: fail(emptyName)
        ),
        SaveEditCase(
            testDescription: "item unchanged, quantity out of range: validationFailed on the quantity",
            baseVersion: 1, draft: Draft(name: "Keyboard", color: nil, status: .inStock(quantity: -1)), current: Fixture.keyboard,
            expected: fail(.validationFailed(field: "status.inStock.quantity", message: "quantity must be between 0 and 1000000000"))
        ),
    ]

    @Test("save on edit", arguments: saveEditCases)
    func saveOnEdit(_ c: SaveEditCase) {
        let state = NavigationState(
            path: [Fixture.keyboardRoute],
            destination: .edit(itemID: Fixture.keyboardID, baseVersion: c.baseVersion, draft: c.draft)
        )
        var live: [ItemID: Item] = [Fixture.mouseID: Fixture.mouse]
        live[Fixture.keyboardID] = c.current
        #expect(decide(.save(), on: state, live: live) == c.expected)
    }

    @Test("save error codes are stable")
    func saveErrorCodes() {
        let state = NavigationState(destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed))
        #expect(decide(.save(), on: state, live: [:]).errorCode == "itemDeleted")
        #expect(decide(.save(), on: state, live: [Fixture.keyboardID: Self.keyboardV2]).errorCode == "conflict")
    }

    @Test("save on add or duplicate with an invalid draft is validationFailed", arguments: [
        Destination.add(draft: Fixture.invalid),
        .duplicate(itemID: Fixture.keyboardID, draft: Fixture.invalid),
        .duplicate(itemID: Fixture.missingID, draft: Fixture.invalid),
    ])
    func saveInvalidInsert(_ destination: Destination) {
        #expect(decide(.save(), on: NavigationState(destination: destination)) == fail(Self.emptyName))
    }

    @Test("save on add inserts the trimmed draft and closes the sheet")
    func saveAdd() throws {
        let state = NavigationState(tab: .inventory, path: [Fixture.mouseRoute], destination: .add(draft: Fixture.other))
        let t = try decide(.save(), on: state).get()
        let expected = try ValidDraft(Fixture.other)
        #expect(t == Transition(state: NavigationState(tab: .inventory, path: [Fixture.mouseRoute], destination: nil), effect: .insert(expected)))
        #expect(expected.name == "Mechanical Keyboard")
    }

    // MARK: unchanged successes

    @Test("cancel with nothing open returns the unchanged state and no effect", arguments: Start.paths.map(\.1))
    func cancelNothingOpen(_ path: [Route]) {
        for tab in Tab.allCases {
            let state = NavigationState(tab: tab, path: path, destination: nil)
            #expect(decide(.cancel, on: state) == .success(Transition(state: state, effect: .none)))
        }
    }

    @Test("popToRoot on an empty path returns the unchanged state and no effect")
    func popToRootEmpty() {
        for (_, destination) in Start.destinations where destination?.alert == nil {
            for tab in Tab.allCases {
                let state = NavigationState(tab: tab, path: [], destination: destination)
                #expect(decide(.popToRoot, on: state) == .success(Transition(state: state, effect: .none)))
            }
        }
    }

    // MARK: open* replaces

    @Test("openAdd replaces an open edit, discarding its draft")
    func openAddReplacesEdit() {
        let state = NavigationState(
            path: [Fixture.keyboardRoute],
            destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed)
        )
        #expect(decide(.openAdd, on: state) == ok(NavigationState(
            path: [Fixture.keyboardRoute],
            destination: .add(draft: Draft(name: "", color: nil, status: .inStock(quantity: 1)))
        )))
    }

    @Test("openEdit on an item whose edit is already open starts over from the item")
    func openEditAgain() {
        let state = NavigationState(destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed))
        #expect(decide(.openEdit(itemID: Fixture.keyboardID), on: state)
            == ok(NavigationState(destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.keyboard.draft))))
    }

    @Test("openEdit takes baseVersion from the item's current version")
    func openEditBaseVersion() {
        let live: [ItemID: Item] = [Fixture.keyboardID: Self.keyboardV2]
        #expect(decide(.openEdit(itemID: Fixture.keyboardID), on: .root, live: live)
            == ok(NavigationState(destination: .edit(
                itemID: Fixture.keyboardID, baseVersion: 2,
                draft: Draft(name: "Keyboard (renamed elsewhere)", color: nil, status: .inStock(quantity: 3))
            ))))
    }

    // MARK: restore

    @Test("restore copies the source state, drafts included, replacing whatever was open but an alert")
    func restoreCopies() {
        let source = NavigationState(
            tab: .settings,
            path: [Fixture.keyboardRoute, Fixture.mouseRoute],
            destination: .add(draft: Draft(name: "half-typed na", color: nil, status: .inStock(quantity: 7)))
        )
        for start in Start.all {
            let expected = start.state.destination?.alert == nil ? ok(source) : alertRefusal(.restore(fromClientID: "ipad"))
            #expect(decide(.restore(fromClientID: "ipad"), on: start.state, restoreSource: source) == expected)
        }
        let emptySource = NavigationState.root
        let busy = NavigationState(
            tab: .settings, path: [Fixture.mouseRoute], destination: .edit(itemID: Fixture.mouseID, baseVersion: 4, draft: Fixture.other))
        #expect(decide(.restore(fromClientID: "ipad"), on: busy, restoreSource: emptySource) == ok(.root))
    }

    @Test("restore from a client that does not exist is clientNotFound")
    func restoreMissing() {
        let result = decide(.restore(fromClientID: "ghost-1"), on: .root, restoreSource: nil)
        #expect(result == fail(.clientNotFound("ghost-1")))
        #expect(result.errorCode == "notFound")
    }

    // MARK: confirmDelete

    @Test("confirmDelete deletes the item and the new state no longer points at it")
    func confirmDelete() {
        let state = NavigationState(
            tab: .inventory,
            path: [Fixture.keyboardRoute, Fixture.mouseRoute, Fixture.keyboardRoute],
            destination: .deleteAlert(for: Fixture.keyboard)
        )
        let result = decide(.confirmDelete, on: state)
        #expect(result == ok(NavigationState(tab: .inventory, path: [Fixture.mouseRoute], destination: nil), .delete(Fixture.keyboardID)))
        if case .success(let t) = result {
            #expect(!t.state.referencedItemIDs.contains(Fixture.keyboardID))
        }
    }

    /// The contract is silent on an alert whose item vanished (a repair would have closed it);
    /// this pins the current behaviour: 409 itemDeleted, nothing deleted.
    @Test("confirmDelete when the alert's item is already gone")
    func confirmDeleteGone() {
        let state = NavigationState(destination: .deleteAlert(itemID: Fixture.missingID, alert: .deleteItem(name: nil)))
        #expect(decide(.confirmDelete, on: state) == fail(.itemDeleted(Fixture.missingID)))
    }

    // MARK: duplicate of a deleted item

    @Test("a duplicate whose source item is missing stays editable and saves as an insert")
    func duplicateOfDeleted() throws {
        var state = NavigationState(
            path: [],
            destination: .duplicate(itemID: Fixture.missingID, draft: Draft(name: "Old name", color: nil, status: .inStock(quantity: 2)))
        )
        let updated = try decide(.updateDraft(draft: Fixture.typed), on: state, live: [:]).get()
        #expect(updated == Transition(state: NavigationState(destination: .duplicate(itemID: Fixture.missingID, draft: Fixture.typed))))
        state = updated.state
        #expect(decide(.save(), on: state, live: [:]) == ok(NavigationState(), .insert(Fixture.typedValid)))
    }

    // MARK: helpers of the store

    @Test("only save, confirmDelete, keeping mine and links that open an editor write items")
    func writesItems() {
        let writers = CommandCase.all.map(\.command).filter(\.writesItems).map(\.name)
        #expect(Set(writers) == ["save", "confirmDelete", "resolveConflict", "openURL"])
        #expect(!Command.resolveConflict(keep: .theirs).writesItems)
        #expect(!Command.openURL(url: "stockroom://inventory/items/\(Fixture.mouseID)").writesItems)
    }

    @Test("itemsToLookUp names what the decision needs")
    func itemsToLookUp() {
        let edit = NavigationState(destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed))
        let alert = NavigationState(destination: .deleteAlert(for: Fixture.mouse))
        #expect(Command.push(route: Fixture.mouseRoute).itemsToLookUp(in: .root) == [Fixture.mouseID])
        #expect(Command.openEdit(itemID: Fixture.keyboardID).itemsToLookUp(in: alert) == [Fixture.keyboardID])
        #expect(Command.save().itemsToLookUp(in: edit) == [Fixture.keyboardID])
        #expect(Command.save().itemsToLookUp(in: NavigationState(destination: .add(draft: .blank))) == [])
        #expect(Command.save().itemsToLookUp(in: NavigationState(destination: .duplicate(itemID: Fixture.keyboardID, draft: .blank))) == [])
        #expect(Command.confirmDelete.itemsToLookUp(in: alert) == [Fixture.mouseID])
        #expect(Command.confirmDelete.itemsToLookUp(in: edit) == [])
        #expect(Command.cancel.itemsToLookUp(in: edit) == [])
    }

    // MARK: the episode of the brief

    @Test("Keyboard: edit, type, cancel leaves the item alone; edit, type, save updates it at version 1")
    func keyboardEpisode() throws {
        var state = NavigationState(path: [Fixture.keyboardRoute])
        var effects: [ItemEffect] = []
        func run(_ command: Command) throws -> Transition {
            let t = try decide(command, on: state).get()
            state = t.state
            effects.append(t.effect)
            return t
        }

        _ = try run(.openEdit(itemID: Fixture.keyboardID))
        #expect(state.destination == .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.keyboard.draft))
        _ = try run(.updateDraft(draft: Draft(name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000))))
        #expect(state.destination == .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed))
        let cancelled = try run(.cancel)
        #expect(cancelled == Transition(state: NavigationState(path: [Fixture.keyboardRoute], destination: nil), effect: .none))
        #expect(effects == [.none, .none, .none], "nothing was written to the item")

        _ = try run(.openEdit(itemID: Fixture.keyboardID))
        #expect(state.destination == .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.keyboard.draft),
                "the cancelled draft is gone")
        _ = try run(.updateDraft(draft: Draft(name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000))))
        let saved = try run(.save())
        let expectedDraft = try ValidDraft(Draft(name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000)))
        #expect(saved == Transition(
            state: NavigationState(path: [Fixture.keyboardRoute], destination: nil),
            effect: .update(Fixture.keyboardID, expectedDraft, expectedVersion: 1)
        ))
        #expect(expectedDraft.name == "Bluetooth Keyboard")
        #expect(expectedDraft.status == .inStock(quantity: 1000))
        #expect(effects.filter { if case .update = $0 { true } else { false } }.count == 1)
    }
}

// MARK: - Repair on delete
