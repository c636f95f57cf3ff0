/// Something a device asks of its navigation state; each is applied as one transaction.
public enum Command: Hashable, Sendable {
    case selectTab(tab: Tab)
    case push(route: Route)
    case pop
    case popToRoot
    case openAdd
    case openEdit(itemID: ItemID)
    case openDuplicate(itemID: ItemID)
    case openDeleteAlert(itemID: ItemID)
    case updateDraft(draft: Draft)
    /// With `onConflict: .alert`, a stale or deleted edit opens the conflict alert instead of
    /// answering `409`.
    case save(onConflict: OnConflict? = nil)
    case cancel
    case confirmDelete
    case restore(fromClientID: ClientID)
    case resolveConflict(keep: ConflictChoice)
    case setCheckpoint(name: String)
    case returnToCheckpoint(name: String, value: JSONValue? = nil)
    case openURL(url: String)

    /// What `save` does when the item changed or was deleted since the edit began.
    public enum OnConflict: String, Hashable, Sendable, CaseIterable {
        /// Keep the draft and open the conflict alert, in the same transaction.
        case alert
    }

    /// A conflict alert's choices.
    public enum ConflictChoice: String, Hashable, Sendable, CaseIterable {
        /// Write the draft over the item as it is now (insert it anew if it was deleted).
        case mine
        /// Discard the draft.
        case theirs
        /// Back to the edit, based on the item as it is now, with the same draft.
        case review
    }

    /// The command's name, as refusals and metrics name it (the wire spells each the same; StockroomWire's coding tests hold it to that).
    public var name: String {
        switch self {
        case .selectTab: "selectTab"
        case .push: "push"
        case .pop: "pop"
        case .popToRoot: "popToRoot"
        case .openAdd: "openAdd"
        case .openEdit: "openEdit"
        case .openDuplicate: "openDuplicate"
        case .openDeleteAlert: "openDeleteAlert"
        case .updateDraft: "updateDraft"
        case .save: "save"
        case .cancel: "cancel"
        case .confirmDelete: "confirmDelete"
        case .restore: "restore"
        case .resolveConflict: "resolveConflict"
        case .setCheckpoint: "setCheckpoint"
        case .returnToCheckpoint: "returnToCheckpoint"
        case .openURL: "openURL"
        }
    }

    /// Whether the command may write an item, or opens a screen that would (a deep link to an
    /// add, edit, duplicate or delete), and so needs the editor role.
    public var writesItems: Bool {
        switch self {
        case .save, .confirmDelete: true
        case .resolveConflict(let keep): keep == .mine
        case .openURL(let url): (try? DeepLink(parsing: url))?.action != nil
        default: false
        }
    }

    /// Whether the command replaces whatever destination is open with another (or with a new state):
    /// accepted while an alert is open, as `cancel` is.
    public var opensDestination: Bool {
        switch self {
        case .openAdd, .openEdit, .openDuplicate, .openDeleteAlert, .openURL: true
        default: false
        }
    }

    /// Whether the decision may need items in some state; false: `itemsToLookUp(in:)` is empty
    /// whatever the state, so a store need not read the state first to learn which items to lock.
    public var readsItems: Bool {
        switch self {
        case .push, .openEdit, .openDuplicate, .openDeleteAlert, .save, .confirmDelete, .resolveConflict, .openURL: true
        case .selectTab, .pop, .popToRoot, .openAdd, .updateDraft, .cancel, .restore, .setCheckpoint, .returnToCheckpoint: false
        }
    }

    /// The items the decision needs to see, given the state it applies to.
    public func itemsToLookUp(in state: NavigationState) -> [ItemID] {
        switch self {
        case .push(.item(let id)), .openEdit(let id), .openDuplicate(let id), .openDeleteAlert(let id):
            return [id]
        case .save:
            if case .edit(let id, _, _) = state.destination { return [id] }
            return []
        case .confirmDelete:
            if case .deleteAlert(let id, _) = state.destination { return [id] }
            return []
        case .resolveConflict:
            if case .conflict(let id, _, _, _, _) = state.destination { return [id] }
            return []
        case .openURL(let url):
            return (try? DeepLink(parsing: url))?.itemIDs ?? []
        default:
            return []
        }
    }
}
