import Foundation
import StockroomCore

extension Color: Codable {
    private enum CodingKeys: String, CodingKey { case name, red, green, blue }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try c.decode(String.self, forKey: .name), red: try c.decode(Double.self, forKey: .red),
            green: try c.decode(Double.self, forKey: .green), blue: try c.decode(Double.self, forKey: .blue))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(red, forKey: .red)
        try c.encode(green, forKey: .green)
        try c.encode(blue, forKey: .blue)
    }
}

/// `{"inStock": {"quantity": 3}}` or `{"outOfStock": {"isOnBackOrder": true}}`.
extension Status: Codable {
    private enum Kind: String, CodingKey, CaseIterable { case inStock, outOfStock }
    private enum Fields: String, CodingKey { case quantity, isOnBackOrder }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Kind.self)
        let kind = try container.onlyKey()
        let fields = try container.nestedContainer(keyedBy: Fields.self, forKey: kind)
        switch kind {
        case .inStock: self = .inStock(quantity: try fields.decode(Int.self, forKey: .quantity))
        case .outOfStock: self = .outOfStock(isOnBackOrder: try fields.decode(Bool.self, forKey: .isOnBackOrder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Kind.self)
        switch self {
        case .inStock(let quantity):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .inStock)
            try fields.encode(quantity, forKey: .quantity)
        case .outOfStock(let isOnBackOrder):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .outOfStock)
            try fields.encode(isOnBackOrder, forKey: .isOnBackOrder)
        }
    }
}

extension Item: Codable {
    private enum CodingKeys: String, CodingKey { case id, name, color, status, version, createdAt, updatedAt }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try c.decode(ItemID.self, forKey: .id), name: try c.decode(String.self, forKey: .name),
            color: try c.decodeNullable(Color.self, forKey: .color), status: try c.decode(Status.self, forKey: .status),
            version: try c.decode(Int.self, forKey: .version), createdAt: try c.decode(Date.self, forKey: .createdAt),
            updatedAt: try c.decode(Date.self, forKey: .updatedAt))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(name, forKey: .name)
        try c.encodeNullable(color, forKey: .color)
        try c.encode(status, forKey: .status)
        try c.encode(version, forKey: .version)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
    }
}

extension Draft: Codable {
    private enum CodingKeys: String, CodingKey { case name, color, status }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try c.decode(String.self, forKey: .name), color: try c.decodeNullable(Color.self, forKey: .color),
            status: try c.decode(Status.self, forKey: .status))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encodeNullable(color, forKey: .color)
        try c.encode(status, forKey: .status)
    }
}
