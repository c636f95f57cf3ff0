import Foundation
import StockroomCore
import StockroomWire

/// The result of a navigation command.
public struct CommandOutcome: Sendable, Hashable {
    /// The device's navigation after the command.
    public var navigation: Navigation
    /// The item the command wrote, if it wrote one (nil for a delete).
    public var item: Item?
    /// The change-log head after the command.
    public var seq: Int64
    /// `navigation`'s JSON as its change entry holds it, when the command wrote one: the answer
    /// splices it instead of writing the navigation again.
    public var navigationJSON: WrittenJSON?
    /// `item`'s JSON as its change entry holds it.
    public var itemJSON: WrittenJSON?

    public init(navigation: Navigation, item: Item?, seq: Int64, navigationJSON: WrittenJSON? = nil, itemJSON: WrittenJSON? = nil) {
        self.navigation = navigation
        self.item = item
        self.seq = seq
        self.navigationJSON = navigationJSON
        self.itemJSON = itemJSON
    }

    /// The outcome's values: the JSON is theirs, written once.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.navigation == rhs.navigation && lhs.item == rhs.item && lhs.seq == rhs.seq
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(navigation)
        hasher.combine(item)
        hasher.combine(seq)
    }
}
