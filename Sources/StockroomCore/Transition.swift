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
            _ = try liveItem(id)
            next.destination = .deleteAlert(itemID: id)

        case .updateDraft(let draft):
            try draft.checkSize()
            switch state.destination {
            case .add:
                next.destination = .add(draft: draft)
            case .edit(let id, let baseVersion, _):
                next.destination = .edit(itemID: id, baseVersion: baseVersion, draft: draft)
            case .duplicate(let id, _):
                next.destination = .duplicate(itemID: id, draft: draft)
            case .deleteAlert, nil:
                throw .invalidTransition("updateDraft needs an open add, edit or duplicate")
            }

        case .save:
            switch state.destination {
            case .add(let draft), .duplicate(_, let draft):
                next.destination = nil
                return Transition(state: next, effect: .insert(try ValidDraft(draft)))
            case .edit(let id, let baseVersion, let draft):
                guard let current = items[id] else { throw .itemDeleted(id) }
                guard current.version == baseVersion else { throw .conflict(current: current) }
                next.destination = nil
                return Transition(state: next, effect: .update(id, try ValidDraft(draft), expectedVersion: baseVersion))
            case .deleteAlert, nil:
                throw .invalidTransition("save needs an open add, edit or duplicate")
            }

        case .cancel:
            next.destination = nil

        case .confirmDelete:
            guard case .deleteAlert(let id) = state.destination else {
                throw .invalidTransition("confirmDelete needs an open delete alert")
            }
            guard items[id] != nil else { throw .itemDeleted(id) }
            next.destination = nil
            return Transition(state: next.repaired(afterDeleting: id), effect: .delete(id))

        case .restore(let clientID):
            guard let source = restoreSource else { throw .clientNotFound(clientID) }
            next = source
        }
        return Transition(state: next)
    }
}
