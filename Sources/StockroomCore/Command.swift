/// Something a device asks of its navigation state; each is applied as one transaction.
public enum Command: Hashable, Sendable, Codable {
    case selectTab(tab: Tab)
    case push(route: Route)
    case pop
    case popToRoot
    case openAdd
    case openEdit(itemID: ItemID)
    case openDuplicate(itemID: ItemID)
    case openDeleteAlert(itemID: ItemID)
    case updateDraft(draft: Draft)
    case save
    case cancel
    case confirmDelete
    case restore(fromClientID: ClientID)

    /// The command's case name as it appears on the wire.
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
        }
    }

    /// Whether the command may write an item, and so needs the editor role.
    public var writesItems: Bool {
        switch self {
        case .save, .confirmDelete: true
        default: false
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
            if case .deleteAlert(let id) = state.destination { return [id] }
            return []
        default:
            return []
        }
    }
}
