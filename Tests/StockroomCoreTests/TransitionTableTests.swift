import Foundation
import Testing
@testable import StockroomCore
import TestSupport


/// Decides `command` the way the store does: only the items `itemsToLookUp(in:)` names are
/// looked up among `live`, a missing one is simply absent from the map.
func decide(
    _ command: Command,
    on state: NavigationState,
    live: [ItemID: Item] = Fixture.live,
    restoreSource: NavigationState? = nil
) -> Result<Transition, DomainError> {
    let wanted = command.itemsToLookUp(in: state)
    let items = live.filter { wanted.contains($0.key) }
    return Result { () throws(DomainError) -> Transition in
        try Transition.decide(command, on: state, items: items, restoreSource: restoreSource)
    }
}

private func ok(_ state: NavigationState, _ effect: ItemEffect = .none) -> Result<Transition, DomainError> {
    .success(Transition(state: state, effect: effect))
}

private func fail(_ error: DomainError) -> Result<Transition, DomainError> { .failure(error) }

/// The refusal of a command that is not one of an open alert's buttons, nor `cancel`, nor an open command.
func alertRefusal(_ command: Command) -> Result<Transition, DomainError> {
    .failure(.invalidTransition("\(command.name) is not one of the open alert's buttons (nor cancel, nor an open command)"))
}

extension NavigationState {
    func with(_ change: (inout NavigationState) -> Void) -> NavigationState {
        var copy = self
        change(&copy)
        return copy
    }
}


// MARK: - The table

/// A starting state: one destination (or none) on an empty or non-empty path.
struct Start: Sendable, CustomTestStringConvertible {
    let name: String
    let state: NavigationState
    var testDescription: String { name }

    static let destinations: [(String, Destination?)] = [
        ("nil", nil),
        ("add", .add(draft: Fixture.typed)),
        ("edit", .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed)),
        ("duplicate", .duplicate(itemID: Fixture.keyboardID, draft: Fixture.typed)),
        ("deleteAlert", .deleteAlert(for: Fixture.keyboard)),
        // Begun at version 0; the keyboard is at version 1 now.
        ("conflict (changed)", .conflict(itemID: Fixture.keyboardID, baseVersion: 0, draft: Fixture.typed, current: Fixture.keyboard)),
        ("conflict (deleted)", .conflict(itemID: Fixture.missingID, baseVersion: 1, draft: Fixture.typed, current: nil)),
    ]
    static let paths: [(String, [Route])] = [
        ("empty path", []),
        ("path [mouse, keyboard]", [Fixture.mouseRoute, Fixture.keyboardRoute]),
    ]
    static let all: [Start] = destinations.flatMap { d in
        paths.map { p in
            Start(name: "destination \(d.0), \(p.0)", state: NavigationState(tab: .inventory, path: p.1, destination: d.1))
        }
    }
}

/// A command with the world it runs in and its expected outcome from any start.
struct CommandCase: Sendable, CustomTestStringConvertible {
    let name: String
    let command: Command
    var live: [ItemID: Item] = Fixture.live
    var restoreSource: NavigationState? = nil
    let expected: @Sendable (NavigationState) -> Result<Transition, DomainError>
    var testDescription: String { name }

    /// The expected outcome from `state`: refused while an alert is open unless the command is one
    /// of its buttons, `cancel` or an open command; else `expected`.
    func outcome(from state: NavigationState) -> Result<Transition, DomainError> {
        if let alert = state.destination?.alert, command != .cancel, !command.opensDestination, !alert.commands.contains(command) {
            return alertRefusal(command)
        }
        return expected(state)
    }

    static let restoreSource = NavigationState(
        tab: .settings,
        path: [Fixture.mouseRoute],
        destination: .edit(itemID: Fixture.mouseID, baseVersion: 4, draft: Fixture.other)
    )

    /// A save where nothing stands in its way: add and duplicate insert, edit updates the item at its version.
    @Sendable static func savedAsUsual(_ s: NavigationState) -> Result<Transition, DomainError> {
        switch s.destination {
        case nil, .deleteAlert, .conflict:
            fail(.invalidTransition("save needs an open add, edit or duplicate"))
        case .add, .duplicate:
            ok(s.with { $0.destination = nil }, .insert(Fixture.typedValid))
        case .edit:
            ok(s.with { $0.destination = nil }, .update(Fixture.keyboardID, Fixture.typedValid, expectedVersion: 1))
        }
    }

    static let all: [CommandCase] = [
        CommandCase(name: "selectTab(settings)", command: .selectTab(tab: .settings)) { s in
            ok(s.with { $0.tab = .settings })
        },
        CommandCase(name: "selectTab(inventory) (already selected)", command: .selectTab(tab: .inventory)) { s in
            ok(s)
        },
        CommandCase(name: "push(mouse)", command: .push(route: Fixture.mouseRoute)) { s in
            ok(s.with { $0.path.append(.item(id: Fixture.mouseID)) })
        },
        CommandCase(name: "push(missing)", command: .push(route: .item(id: Fixture.missingID))) { _ in
            fail(.itemNotFound(Fixture.missingID))
        },
        CommandCase(name: "pop", command: .pop) { s in
            s.path.isEmpty
                ? fail(.invalidTransition("pop needs a non-empty path"))
                : ok(s.with { $0.path = [Fixture.mouseRoute] })
        },
        CommandCase(name: "popToRoot", command: .popToRoot) { s in
            ok(s.with { $0.path = [] })
        },
        CommandCase(name: "openAdd", command: .openAdd) { s in
            ok(s.with {
                $0.destination = .add(draft: Draft(name: "", color: nil, status: .inStock(quantity: 1)))
            })
        },
        CommandCase(name: "openEdit(keyboard)", command: .openEdit(itemID: Fixture.keyboardID)) { s in
            ok(s.with {
                $0.destination = .edit(
                    itemID: Fixture.keyboardID, baseVersion: 1,
                    draft: Draft(name: "Keyboard", color: nil, status: .inStock(quantity: 3))
                )
            })
        },
        CommandCase(name: "openEdit(missing)", command: .openEdit(itemID: Fixture.missingID)) { _ in
            fail(.itemNotFound(Fixture.missingID))
        },
        CommandCase(name: "openDuplicate(mouse)", command: .openDuplicate(itemID: Fixture.mouseID)) { s in
            ok(s.with {
                $0.destination = .duplicate(
                    itemID: Fixture.mouseID,
                    draft: Draft(
                        name: "Mouse", color: Color(name: "Graphite", red: 0.2, green: 0.2, blue: 0.25),
                        status: .outOfStock(isOnBackOrder: true)
                    )
                )
            })
        },
        CommandCase(name: "openDuplicate(missing)", command: .openDuplicate(itemID: Fixture.missingID)) { _ in
            fail(.itemNotFound(Fixture.missingID))
        },
        CommandCase(name: "openDeleteAlert(mouse)", command: .openDeleteAlert(itemID: Fixture.mouseID)) { s in
            ok(s.with { $0.destination = .deleteAlert(for: Fixture.mouse) })
        },
        CommandCase(name: "openDeleteAlert(missing)", command: .openDeleteAlert(itemID: Fixture.missingID)) { _ in
            fail(.itemNotFound(Fixture.missingID))
        },
        CommandCase(name: "updateDraft(other)", command: .updateDraft(draft: Fixture.other)) { s in
            switch s.destination {
            case nil, .deleteAlert, .conflict:
                fail(.invalidTransition("updateDraft needs an open add, edit or duplicate"))
            case .add:
                ok(s.with { $0.destination = .add(draft: Fixture.other) })
            case .edit:
                ok(s.with { $0.destination = .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.other) })
            case .duplicate:
                ok(s.with { $0.destination = .duplicate(itemID: Fixture.keyboardID, draft: Fixture.other) })
            }
        },
        CommandCase(name: "save", command: .save(), expected: savedAsUsual),
        // With the item as the edit began, asking for the alert changes nothing.
        CommandCase(name: "save(onConflict: alert), item current", command: .save(onConflict: .alert), expected: savedAsUsual),
        CommandCase(
            name: "save(onConflict: alert), item changed", command: .save(onConflict: .alert),
            live: [Fixture.keyboardID: TransitionTableTests.keyboardV2, Fixture.mouseID: Fixture.mouse]
        ) { s in
            // Only an edit meets the change; add and duplicate save as usual.
            guard case .edit = s.destination else { return savedAsUsual(s) }
            return ok(s.with {
                $0.destination = .conflict(
                    itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed, current: TransitionTableTests.keyboardV2)
            })
        },
        CommandCase(
            name: "save(onConflict: alert), item deleted", command: .save(onConflict: .alert), live: [Fixture.mouseID: Fixture.mouse]
        ) { s in
            guard case .edit = s.destination else { return savedAsUsual(s) }
            return ok(s.with { $0.destination = .conflict(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed, current: nil) })
        },
        CommandCase(name: "cancel", command: .cancel) { s in
            ok(s.with { $0.destination = nil })
        },
        CommandCase(name: "confirmDelete", command: .confirmDelete) { s in
            switch s.destination {
            case .deleteAlert:
                ok(NavigationState(tab: .inventory, path: s.path.isEmpty ? [] : [Fixture.mouseRoute], destination: nil),
                   .delete(Fixture.keyboardID))
            default:
                fail(.invalidTransition("confirmDelete needs an open delete alert"))
            }
        },
        CommandCase(name: "restore(tablet)", command: .restore(fromClientID: "tablet"), restoreSource: restoreSource) { _ in
            ok(NavigationState(
                tab: .settings,
                path: [.item(id: Fixture.mouseID)],
                destination: .edit(itemID: Fixture.mouseID, baseVersion: 4, draft: Fixture.other)
            ))
        },
        CommandCase(name: "restore(unknown client)", command: .restore(fromClientID: "tablet"), restoreSource: nil) { _ in
            fail(.clientNotFound("tablet"))
        },
        CommandCase(name: "resolveConflict(mine)", command: .resolveConflict(keep: .mine)) { s in
            switch s.destination {
            case .conflict(_, _, _, .some, _):
                // The item is still at the version the alert showed: the draft is written over it.
                ok(s.with { $0.destination = nil }, .update(Fixture.keyboardID, Fixture.typedValid, expectedVersion: 1))
            case .conflict(_, _, _, nil, _):
                ok(s.with { $0.destination = nil }, .insert(Fixture.typedValid))
            default:
                fail(.invalidTransition("resolveConflict needs an open conflict"))
            }
        },
        CommandCase(name: "resolveConflict(theirs)", command: .resolveConflict(keep: .theirs)) { s in
            guard case .conflict = s.destination else { return fail(.invalidTransition("resolveConflict needs an open conflict")) }
            return ok(s.with { $0.destination = nil })
        },
        CommandCase(name: "resolveConflict(review)", command: .resolveConflict(keep: .review)) { s in
            switch s.destination {
            case .conflict(_, _, _, .some, _):
                ok(s.with { $0.destination = .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed) })
            case .conflict(_, _, _, nil, _):
                fail(.invalidTransition("review needs an item that still exists; it was deleted"))
            default:
                fail(.invalidTransition("resolveConflict needs an open conflict"))
            }
        },
        CommandCase(name: "setCheckpoint(list)", command: .setCheckpoint(name: "list")) { s in
            ok(s.with { $0.checkpoints["list"] = Checkpoint(depth: s.path.count) })
        },
        CommandCase(name: "returnToCheckpoint(unknown)", command: .returnToCheckpoint(name: "list", value: .string("picked"))) { _ in
            fail(.invalidTransition("no checkpoint named \"list\""))
        },
        CommandCase(name: "openURL(settings, mouse, edit)", command: .openURL(url: "stockroom://settings/items/\(Fixture.mouseID)/edit")) { _ in
            ok(NavigationState(
                tab: .settings, path: [Fixture.mouseRoute],
                destination: .edit(itemID: Fixture.mouseID, baseVersion: 4, draft: Fixture.mouse.draft)))
        },
        CommandCase(name: "openURL(missing item)", command: .openURL(url: "stockroom://inventory/items/\(Fixture.missingID)")) { _ in
            fail(.itemNotFound(Fixture.missingID))
        },
        CommandCase(name: "openURL(malformed)", command: .openURL(url: "stockroom://inventory/item/\(Fixture.mouseID)")) { _ in
            fail(.validationFailed(field: "url", message: "segment 2, \"item\", is not one of items, new, edit, duplicate, delete"))
        },
    ]
}

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
