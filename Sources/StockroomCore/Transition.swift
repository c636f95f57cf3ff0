/// The outcome of a command: the new navigation state and the item effect.
public struct Transition: Hashable, Sendable {
    /// The navigation state after the command.
    public var state: NavigationState
    /// What happens to items.
    public var effect: ItemEffect

    /// Creates a transition.
    public init(state: NavigationState, effect: ItemEffect = .none) {
        self.state = state
        self.effect = effect
    }

    /// Decides what `command` does to `state`. `items` holds the live items among those
    /// `command.itemsToLookUp(in:)` named (a missing key means missing or deleted);
    /// `restoreSource` is the state a `restore` copies, nil when that client does not exist.
    public static func decide(
        _ command: Command,
        on state: NavigationState,
        items: [ItemID: Item],
        restoreSource: NavigationState? = nil
    ) throws(DomainError) -> Transition {
        func liveItem(_ id: ItemID) throws(DomainError) -> Item {
            guard let item = items[id] else { throw .itemNotFound(id) }
            return item
        }
        if let alert = state.destination?.alert, command != .cancel, !command.opensDestination, !alert.commands.contains(command) {
            throw .invalidTransition("\(command.name) is not one of the open alert's buttons (nor cancel, nor an open command)")
        }
        var next = state
        switch command {
        case .selectTab(let tab):
            next.tab = tab

        case .push(let route):
            _ = try liveItem(route.itemID)
            guard next.path.count < NavigationState.maxPathDepth else {
                throw .validationFailed(field: "path", message: "path may hold at most \(NavigationState.maxPathDepth) routes")
            }
            next.path.append(route)

        case .pop:
            guard !next.path.isEmpty else { throw .invalidTransition("pop needs a non-empty path") }
            next.path.removeLast()

        case .popToRoot:
            next.path.removeAll()

        case .openAdd:
            next.destination = .add(draft: .blank)

        case .openEdit(let id):
            let item = try liveItem(id)
            next.destination = .edit(itemID: id, baseVersion: item.version, draft: item.draft)

        case .openDuplicate(let id):
            next.destination = .duplicate(itemID: id, draft: try liveItem(id).draft)

        case .openDeleteAlert(let id):
            next.destination = .deleteAlert(for: try liveItem(id))

        case .updateDraft(let draft):
            try draft.checkSize()
            switch state.destination {
            case .add:
                next.destination = .add(draft: draft)
            case .edit(let id, let baseVersion, _):
                next.destination = .edit(itemID: id, baseVersion: baseVersion, draft: draft)
            case .duplicate(let id, _):
                next.destination = .duplicate(itemID: id, draft: draft)
            case .deleteAlert, .conflict, nil:
                throw .invalidTransition("updateDraft needs an open add, edit or duplicate")
            }

        case .save(let onConflict):
            switch state.destination {
            case .add(let draft), .duplicate(_, let draft):
                next.destination = nil
                return Transition(state: next, effect: .insert(try ValidDraft(draft)))
            case .edit(let id, let baseVersion, let draft):
                let current = items[id]
                guard let current, current.version == baseVersion else {
                    if onConflict == .alert {
                        next.destination = .conflict(itemID: id, baseVersion: baseVersion, draft: draft, current: current)
                        return Transition(state: next)
                    }
                    if let current { throw .conflict(current: current) }
                    throw .itemDeleted(id)
                }
                next.destination = nil
                return Transition(state: next, effect: .update(id, try ValidDraft(draft), expectedVersion: baseVersion))
            case .deleteAlert, .conflict, nil:
                throw .invalidTransition("save needs an open add, edit or duplicate")
            }

        case .cancel:
            next.destination = nil

        case .confirmDelete:
            guard case .deleteAlert(let id, _) = state.destination else {
                throw .invalidTransition("confirmDelete needs an open delete alert")
            }
            guard items[id] != nil else { throw .itemDeleted(id) }
            next.destination = nil
            return Transition(state: next.repaired(afterDeleting: id), effect: .delete(id))

        case .restore(let clientID):
            guard let source = restoreSource else { throw .clientNotFound(clientID) }
            next = source

        case .resolveConflict(let keep):
            guard case .conflict(let id, _, let draft, let seen, _) = state.destination else {
                throw .invalidTransition("resolveConflict needs an open conflict")
            }
            switch keep {
            case .theirs:
                next.destination = nil
            case .review:
                guard let seen else { throw .invalidTransition("review needs an item that still exists; it was deleted") }
                next.destination = .edit(itemID: id, baseVersion: seen.version, draft: draft)
            case .mine:
                guard let seen else {
                    // Deleted when the alert opened: the draft becomes a new item.
                    next.destination = nil
                    return Transition(state: next, effect: .insert(try ValidDraft(draft)))
                }
                // A save over the version the user saw: changed again (or deleted) since, a new conflict.
                let current = items[id]
                guard let current, current.version == seen.version else {
                    next.destination = .conflict(itemID: id, baseVersion: seen.version, draft: draft, current: current)
                    return Transition(state: next)
                }
                next.destination = nil
                return Transition(state: next, effect: .update(id, try ValidDraft(draft), expectedVersion: seen.version))
            }

        case .setCheckpoint(let name):
            try Checkpoint.checkName(name)
            guard next.checkpoints[name] != nil || next.checkpoints.count < Checkpoint.maxCount else {
                throw .validationFailed(field: "name", message: "a state may hold at most \(Checkpoint.maxCount) checkpoints")
            }
            next.checkpoints[name] = Checkpoint(depth: next.path.count)

        case .returnToCheckpoint(let name, let value):
            guard let checkpoint = next.checkpoints[name] else {
                throw .invalidTransition("no checkpoint named \"\(name.terminalSafe)\"")
            }
            try value?.checkSize(field: "value")
            next.path.removeLast(next.path.count - checkpoint.depth)
            next.destination = nil
            next.checkpoints[name]?.value = value

        case .openURL(let url):
            let link = try DeepLink(parsing: url)
            for id in link.itemIDs { _ = try liveItem(id) }
            next = NavigationState(tab: link.tab, path: link.path.map { .item(id: $0) })
            switch link.action {
            case nil: break
            case .add: next.destination = .add(draft: .blank)
            case .edit(let id):
                let item = try liveItem(id)
                next.destination = .edit(itemID: id, baseVersion: item.version, draft: item.draft)
            case .duplicate(let id): next.destination = .duplicate(itemID: id, draft: try liveItem(id).draft)
            case .delete(let id): next.destination = .deleteAlert(for: try liveItem(id))
            }
        }
        return Transition(state: next.prunedCheckpoints())
    }
}
