import StockroomCore

/// A command is `{"<name>": {<its fields>}}`, the name as `Command.name` says it: `{"pop": {}}`,
/// `{"selectTab": {"tab": "inventory"}}`, `{"save": {"onConflict": "alert"}}`. An optional field is
/// left out when nil. Unknown keys are ignored; none or several known names is a type mismatch.
extension Command: Codable {
    enum Name: String, CodingKey, CaseIterable {
        case selectTab, push, pop, popToRoot, openAdd, openEdit, openDuplicate, openDeleteAlert, updateDraft, save, cancel
        case confirmDelete, restore, resolveConflict, setCheckpoint, returnToCheckpoint, openURL
    }

    private enum Fields: String, CodingKey { case tab, route, itemID, draft, onConflict, fromClientID, keep, name, value, url }

    /// The command's key on the wire.
    var wireName: Name {
        switch self {
        case .selectTab: .selectTab
        case .push: .push
        case .pop: .pop
        case .popToRoot: .popToRoot
        case .openAdd: .openAdd
        case .openEdit: .openEdit
        case .openDuplicate: .openDuplicate
        case .openDeleteAlert: .openDeleteAlert
        case .updateDraft: .updateDraft
        case .save: .save
        case .cancel: .cancel
        case .confirmDelete: .confirmDelete
        case .restore: .restore
        case .resolveConflict: .resolveConflict
        case .setCheckpoint: .setCheckpoint
        case .returnToCheckpoint: .returnToCheckpoint
        case .openURL: .openURL
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Name.self)
        let name = try container.onlyKey()
        let fields = try container.nestedContainer(keyedBy: Fields.self, forKey: name)
        switch name {
        case .selectTab: self = .selectTab(tab: try fields.decode(Tab.self, forKey: .tab))
        case .push: self = .push(route: try fields.decode(Route.self, forKey: .route))
        case .pop: self = .pop
        case .popToRoot: self = .popToRoot
        case .openAdd: self = .openAdd
        case .openEdit: self = .openEdit(itemID: try fields.decode(ItemID.self, forKey: .itemID))
        case .openDuplicate: self = .openDuplicate(itemID: try fields.decode(ItemID.self, forKey: .itemID))
        case .openDeleteAlert: self = .openDeleteAlert(itemID: try fields.decode(ItemID.self, forKey: .itemID))
        case .updateDraft: self = .updateDraft(draft: try fields.decode(Draft.self, forKey: .draft))
        case .save: self = .save(onConflict: try fields.decodeIfPresent(OnConflict.self, forKey: .onConflict))
        case .cancel: self = .cancel
        case .confirmDelete: self = .confirmDelete
        case .restore: self = .restore(fromClientID: try fields.decode(ClientID.self, forKey: .fromClientID))
        case .resolveConflict: self = .resolveConflict(keep: try fields.decode(ConflictChoice.self, forKey: .keep))
        case .setCheckpoint: self = .setCheckpoint(name: try fields.decode(String.self, forKey: .name))
        case .returnToCheckpoint:
            self = .returnToCheckpoint(
                name: try fields.decode(String.self, forKey: .name), value: try fields.decodeIfPresent(JSONValue.self, forKey: .value))
        case .openURL: self = .openURL(url: try fields.decode(String.self, forKey: .url))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Name.self)
        var fields = container.nestedContainer(keyedBy: Fields.self, forKey: wireName)
        switch self {
        case .pop, .popToRoot, .openAdd, .cancel, .confirmDelete: break
        case .selectTab(let tab): try fields.encode(tab, forKey: .tab)
        case .push(let route): try fields.encode(route, forKey: .route)
        case .openEdit(let id), .openDuplicate(let id), .openDeleteAlert(let id): try fields.encode(id, forKey: .itemID)
        case .updateDraft(let draft): try fields.encode(draft, forKey: .draft)
        case .save(let onConflict): try fields.encodeIfPresent(onConflict, forKey: .onConflict)
        case .restore(let clientID): try fields.encode(clientID, forKey: .fromClientID)
        case .resolveConflict(let keep): try fields.encode(keep, forKey: .keep)
        case .setCheckpoint(let name): try fields.encode(name, forKey: .name)
        case .returnToCheckpoint(let name, let value):
            try fields.encode(name, forKey: .name)
            try fields.encodeIfPresent(value, forKey: .value)
        case .openURL(let url): try fields.encode(url, forKey: .url)
        }
    }
}
