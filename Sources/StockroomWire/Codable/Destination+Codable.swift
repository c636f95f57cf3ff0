import StockroomCore

/// `{"<kind>": {…}}`: exactly one of add, edit, duplicate, deleteAlert, conflict.
extension Destination: Codable {
    private enum Kind: String, CodingKey { case add, edit, duplicate, deleteAlert, conflict }
    private enum Fields: String, CodingKey { case itemID, baseVersion, draft, current, alert }

    /// Reads the contract's shape. An alert that is absent (a client's `PUT`, or a state stored before
    /// alerts were data) reads as the one the server renders from what the destination holds.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Kind.self)
        guard container.allKeys.count == 1, let kind = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: container.codingPath, debugDescription: "a destination has exactly one of add, edit, duplicate, deleteAlert, conflict"))
        }
        let fields = try container.nestedContainer(keyedBy: Fields.self, forKey: kind)
        switch kind {
        case .add:
            self = .add(draft: try fields.decode(Draft.self, forKey: .draft))
        case .edit:
            self = .edit(
                itemID: try fields.decode(ItemID.self, forKey: .itemID),
                baseVersion: try fields.decode(Int.self, forKey: .baseVersion),
                draft: try fields.decode(Draft.self, forKey: .draft))
        case .duplicate:
            self = .duplicate(itemID: try fields.decode(ItemID.self, forKey: .itemID), draft: try fields.decode(Draft.self, forKey: .draft))
        case .deleteAlert:
            self = .deleteAlert(
                itemID: try fields.decode(ItemID.self, forKey: .itemID),
                alert: try fields.decodeIfPresent(AlertState.self, forKey: .alert) ?? .deleteItem(name: nil))
        case .conflict:
            let itemID = try fields.decode(ItemID.self, forKey: .itemID)
            let baseVersion = try fields.decode(Int.self, forKey: .baseVersion)
            let draft = try fields.decode(Draft.self, forKey: .draft)
            let current = try fields.decodeIfPresent(Item.self, forKey: .current)
            if let alert = try fields.decodeIfPresent(AlertState.self, forKey: .alert) {
                self = .conflict(itemID: itemID, baseVersion: baseVersion, draft: draft, current: current, alert: alert)
            } else {
                self = .conflict(itemID: itemID, baseVersion: baseVersion, draft: draft, current: current)
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Kind.self)
        switch self {
        case .add(let draft):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .add)
            try fields.encode(draft, forKey: .draft)
        case .edit(let itemID, let baseVersion, let draft):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .edit)
            try fields.encode(itemID, forKey: .itemID)
            try fields.encode(baseVersion, forKey: .baseVersion)
            try fields.encode(draft, forKey: .draft)
        case .duplicate(let itemID, let draft):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .duplicate)
            try fields.encode(itemID, forKey: .itemID)
            try fields.encode(draft, forKey: .draft)
        case .deleteAlert(let itemID, let alert):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .deleteAlert)
            try fields.encode(itemID, forKey: .itemID)
            try fields.encode(alert, forKey: .alert)
        case .conflict(let itemID, let baseVersion, let draft, let current, let alert):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .conflict)
            try fields.encode(itemID, forKey: .itemID)
            try fields.encode(baseVersion, forKey: .baseVersion)
            try fields.encode(draft, forKey: .draft)
            try fields.encodeNullable(current, forKey: .current)
            try fields.encode(alert, forKey: .alert)
        }
    }
}

extension TextState: Codable {
    private enum CodingKeys: String, CodingKey { case key, args, text }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(key: try c.decode(String.self, forKey: .key), args: try c.decode([String].self, forKey: .args), text: try c.decode(String.self, forKey: .text))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(key, forKey: .key)
        try c.encode(args, forKey: .args)
        try c.encode(text, forKey: .text)
    }
}

extension AlertState: Codable {
    private enum CodingKeys: String, CodingKey { case title, message, buttons }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            title: try c.decode(TextState.self, forKey: .title), message: try c.decodeNullable(TextState.self, forKey: .message),
            buttons: try c.decode([ButtonState].self, forKey: .buttons))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(title, forKey: .title)
        try c.encodeNullable(message, forKey: .message)
        try c.encode(buttons, forKey: .buttons)
    }
}

extension ButtonState: Codable {
    private enum CodingKeys: String, CodingKey { case label, role, command }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            label: try c.decode(TextState.self, forKey: .label), role: try c.decodeNullable(Role.self, forKey: .role),
            command: try c.decode(Command.self, forKey: .command))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(label, forKey: .label)
        try c.encodeNullable(role, forKey: .role)
        try c.encode(command, forKey: .command)
    }
}
