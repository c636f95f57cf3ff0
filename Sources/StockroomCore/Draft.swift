/// An item's editable fields as typed by a user; may be invalid until saved.
public struct Draft: Hashable, Sendable {
    /// The name as typed (not yet trimmed).
    public var name: String
    /// The colour, if any.
    public var color: Color?
    /// Stock status.
    public var status: Status

    /// Creates a draft.
    public init(name: String, color: Color?, status: Status) {
        self.name = name
        self.color = color
        self.status = status
    }

    /// The draft an add sheet opens with.
    public static let blank = Draft(name: "", color: nil, status: .inStock(quantity: 1))
}

extension Draft: Codable {
    private enum CodingKeys: String, CodingKey { case name, color, status }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try c.decode(String.self, forKey: .name),
            color: try c.decodeIfPresent(Color.self, forKey: .color),
            status: try c.decode(Status.self, forKey: .status)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(color, forKey: .color)
        try c.encode(status, forKey: .status)
    }
}
