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

func ok(_ state: NavigationState, _ effect: ItemEffect = .none) -> Result<Transition, DomainError> {
    .success(Transition(state: state, effect: effect))
}

func fail(_ error: DomainError) -> Result<Transition, DomainError> { .failure(error) }

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
