import Foundation
import StockroomCore

/// One item of a batch create: an optional id and the fields.
public struct BatchItem: Sendable, Hashable {
    /// The most items one batch may hold.
    public static let maximumCount = 1000

    /// The id to create it under; a random one when nil.
    public var id: ItemID?
    /// Its fields, validated per item.
    public var draft: Draft

    /// Creates a batch entry.
    public init(id: ItemID?, draft: Draft) {
        self.id = id
        self.draft = draft
    }
}
