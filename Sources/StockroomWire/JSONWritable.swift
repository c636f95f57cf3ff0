import StockroomCore

/// A value that writes its own contract JSON, the same value `JSONCoding.encoder()` writes.
public protocol JSONWritable {
    /// Appends the value's JSON.
    func write(to json: inout JSONWriter)

    /// The value's JSON bytes (a default writes them; `WrittenJSON` holds them already).
    var jsonBytes: [UInt8] { get }
}

extension JSONWritable {
    /// The value's JSON bytes.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
    }
}

/// A value's JSON written once, to be spliced wherever the value is written again: a write's
/// change entry and its answer carry the same bytes.
public struct WrittenJSON: JSONWritable, Hashable, Sendable {
    public let jsonBytes: [UInt8]

    public init(_ value: some JSONWritable) {
        jsonBytes = value.jsonBytes
    }

    /// Bytes a value's `write(to:)` would write, written another way (`Navigation.jsonBytes(stateJSON:)`).
    public init(jsonBytes: [UInt8]) {
        self.jsonBytes = jsonBytes
    }

    public func write(to json: inout JSONWriter) {
        json.raw(json: jsonBytes)
    }
}

extension Color: JSONWritable {
    public func write(to json: inout JSONWriter) {
        fields.write(to: &json)
    }

    /// The colour as `ColorJSON` writes it.
    var fields: ColorJSON<String> { ColorJSON(name: name, red: red, green: green, blue: blue) }
}

extension Status: JSONWritable {
    public func write(to json: inout JSONWriter) {
        switch self {
        case .inStock(let quantity):
            json.raw(#"{"inStock":{"quantity":"#)
            json.int(quantity)
            json.raw("}}")
        case .outOfStock(let isOnBackOrder):
            json.raw(#"{"outOfStock":{"isOnBackOrder":"#)
            json.bool(isOnBackOrder)
            json.raw("}}")
        }
    }
}

extension Item: JSONWritable {
    public func write(to json: inout JSONWriter) {
        ItemJSON.write(
            id: id, name: name, color: color?.fields,
            status: status, version: Int64(version), createdAt: Timestamp.milliseconds(createdAt),
            updatedAt: Timestamp.milliseconds(updatedAt), to: &json)
    }
}

extension Draft: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw("{")
        ItemJSON.writeEditableFields(
            name: name, color: color?.fields,
            status: status, to: &json)
        json.raw("}")
    }
}

extension Route: JSONWritable {
    public func write(to json: inout JSONWriter) {
        switch self {
        case .item(let id):
            json.raw(#"{"item":{"id":"#)
            json.itemID(id)
            json.raw("}}")
        }
    }
}

extension Destination: JSONWritable {
    public func write(to json: inout JSONWriter) {
        switch self {
        case .add(let draft):
            json.raw(#"{"add":{"draft":"#)
            draft.write(to: &json)
        case .edit(let itemID, let baseVersion, let draft):
            json.raw(#"{"edit":{"itemID":"#)
            json.itemID(itemID)
            json.raw(#","baseVersion":"#)
            json.int(baseVersion)
            json.raw(#","draft":"#)
            draft.write(to: &json)
        case .duplicate(let itemID, let draft):
            json.raw(#"{"duplicate":{"itemID":"#)
            json.itemID(itemID)
            json.raw(#","draft":"#)
            draft.write(to: &json)
        case .deleteAlert(let itemID, let alert):
            json.raw(#"{"deleteAlert":{"itemID":"#)
            json.itemID(itemID)
            json.raw(#","alert":"#)
            alert.write(to: &json)
        case .conflict(let itemID, let baseVersion, let draft, let current, let alert):
            json.raw(#"{"conflict":{"itemID":"#)
            json.itemID(itemID)
            json.raw(#","baseVersion":"#)
            json.int(baseVersion)
            json.raw(#","draft":"#)
            draft.write(to: &json)
            json.raw(#","current":"#)
            if let current { current.write(to: &json) } else { json.raw("null") }
            json.raw(#","alert":"#)
            alert.write(to: &json)
        }
        json.raw("}}")
    }
}

extension TextState: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"key":"#)
        json.string(key)
        json.raw(#","args":["#)
        for (index, arg) in args.enumerated() {
            if index > 0 { json.raw(",") }
            json.string(arg)
        }
        json.raw(#"],"text":"#)
        json.string(text)
        json.raw("}")
    }
}

extension AlertState: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"title":"#)
        title.write(to: &json)
        json.raw(#","message":"#)
        if let message { message.write(to: &json) } else { json.raw("null") }
        json.raw(#","buttons":["#)
        for (index, button) in buttons.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw(#"{"label":"#)
            button.label.write(to: &json)
            json.raw(#","role":"#)
            if let role = button.role { json.string(role.rawValue) } else { json.raw("null") }
            json.raw(#","command":"#)
            button.command.write(to: &json)
            json.raw("}")
        }
        json.raw("]}")
    }
}

extension Command: JSONWritable {
    /// `{"<name>": {…}}`, as `Command`'s `Codable` writes it.
    public func write(to json: inout JSONWriter) {
        json.raw("{")
        json.string(wireName.rawValue)
        json.raw(":{")
        switch self {
        case .pop, .popToRoot, .openAdd, .cancel, .confirmDelete, .save(onConflict: nil):
            break
        case .selectTab(let tab):
            json.raw(#""tab":"#)
            json.string(tab.rawValue)
        case .push(let route):
            json.raw(#""route":"#)
            route.write(to: &json)
        case .openEdit(let id), .openDuplicate(let id), .openDeleteAlert(let id):
            json.raw(#""itemID":"#)
            json.itemID(id)
        case .updateDraft(let draft):
            json.raw(#""draft":"#)
            draft.write(to: &json)
        case .save(.some(let onConflict)):
            json.raw(#""onConflict":"#)
            json.string(onConflict.rawValue)
        case .restore(let clientID):
            json.raw(#""fromClientID":"#)
            json.string(clientID.rawValue)
        case .resolveConflict(let keep):
            json.raw(#""keep":"#)
            json.string(keep.rawValue)
        case .setCheckpoint(let name):
            json.raw(#""name":"#)
            json.string(name)
        case .returnToCheckpoint(let name, let value):
            json.raw(#""name":"#)
            json.string(name)
            if let value {
                json.raw(#","value":"#)
                value.write(to: &json)
            }
        case .openURL(let url):
            json.raw(#""url":"#)
            json.string(url)
        }
        json.raw("}}")
    }
}

extension JSONValue: JSONWritable {
    public func write(to json: inout JSONWriter) {
        switch self {
        case .null: json.raw("null")
        case .bool(let value): json.bool(value)
        case .number(let value): json.double(value)
        case .string(let value): json.string(value)
        case .array(let values):
            json.raw("[")
            for (index, value) in values.enumerated() {
                if index > 0 { json.raw(",") }
                value.write(to: &json)
            }
            json.raw("]")
        case .object(let members):
            json.object(sortedByKey: members)
        }
    }
}

extension Checkpoint: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"depth":"#)
        json.int(depth)
        json.raw(#","value":"#)
        if let value { value.write(to: &json) } else { json.raw("null") }
        json.raw("}")
    }
}

extension NavigationState: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw("{")
        writeFields(to: &json)
        json.raw("}")
    }

    /// `"tab":…,"path":[…],"destination":…,"checkpoints":{…}`, shared with `Navigation`.
    func writeFields(to json: inout JSONWriter) {
        json.raw(#""tab":"#)
        json.string(tab.rawValue)
        json.raw(#","path":["#)
        for (index, route) in path.enumerated() {
            if index > 0 { json.raw(",") }
            route.write(to: &json)
        }
        json.raw(#"],"destination":"#)
        if let destination { destination.write(to: &json) } else { json.raw("null") }
        json.raw(#","checkpoints":"#)
        json.object(sortedByKey: checkpoints)
    }
}

extension Navigation: JSONWritable {
    public func write(to json: inout JSONWriter) {
        writeHead(to: &json)
        state.writeFields(to: &json)
        writeTail(to: &json)
    }

    /// `jsonBytes`, from the state's own JSON (`state.jsonBytes`: `{`, its fields, `}`) written
    /// already: a command's write stores the state's JSON in the device's row and the navigation's
    /// in its change entry, and writes the state's fields once for both.
    public func jsonBytes(stateJSON: [UInt8]) -> [UInt8] {
        precondition(stateJSON.first == UInt8(ascii: "{") && stateJSON.last == UInt8(ascii: "}"), "not a state's JSON")
        var json = JSONWriter(capacity: stateJSON.count + 160)
        writeHead(to: &json)
        json.raw(json: stateJSON.dropFirst().dropLast())
        writeTail(to: &json)
        return json.bytes
    }

    private func writeHead(to json: inout JSONWriter) {
        json.raw(#"{"clientID":"#)
        json.string(clientID.rawValue)
        json.raw(",")
    }

    private func writeTail(to json: inout JSONWriter) {
        json.raw(#","url":"#)
        json.string(state.url)
        json.raw(#","version":"#)
        json.int(version)
        json.raw(#","updatedAt":"#)
        json.timestamp(updatedAt)
        json.raw("}")
    }
}

extension Presence: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"clientID":"#)
        json.string(clientID.rawValue)
        json.raw(#","online":"#)
        json.bool(online)
        json.raw(#","lastSeenAt":"#)
        json.timestamp(lastSeenAt)
        json.raw("}")
    }
}

extension JSONWriter {
    /// `{"key": value, …}` in key order: one dictionary is always the same bytes.
    mutating func object(sortedByKey members: [String: some JSONWritable]) {
        raw("{")
        for (index, key) in members.keys.sorted().enumerated() {
            if index > 0 { raw(",") }
            string(key)
            raw(":")
            members[key]!.write(to: &self)
        }
        raw("}")
    }
}
