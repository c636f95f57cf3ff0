import StockroomCore

/// A value that writes its own contract JSON, the same value `JSONCoding.encoder()` writes.
public protocol JSONWritable {
    /// Appends the value's JSON.
    func write(to json: inout JSONWriter)
}

extension JSONWritable {
    /// The value's JSON bytes.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
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
        case .deleteAlert(let itemID):
            json.raw(#"{"deleteAlert":{"itemID":"#)
            json.itemID(itemID)
        }
        json.raw("}}")
    }
}

extension NavigationState: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw("{")
        writeFields(to: &json)
        json.raw("}")
    }

    /// `"tab":…,"path":[…],"destination":…`, shared with `Navigation`.
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
    }
}

extension Navigation: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"clientID":"#)
        json.string(clientID.rawValue)
        json.raw(",")
        state.writeFields(to: &json)
        json.raw(#","version":"#)
        json.int(version)
        json.raw(#","updatedAt":"#)
        if let updatedAt { json.timestamp(updatedAt) } else { json.raw("null") }
        json.raw("}")
    }
}
