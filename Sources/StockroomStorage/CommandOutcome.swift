import Foundation
import StockroomCore

/// The result of a navigation command.
public struct CommandOutcome: Sendable, Hashable {
    /// The device's navigation after the command.
    public var navigation: Navigation
    /// The item the command wrote, if it wrote one (nil for a delete).
    public var item: Item?
    /// The change-log head after the command.
    public var seq: Int64

    public init(navigation: Navigation, item: Item?, seq: Int64) {
        self.navigation = navigation
        self.item = item
        self.seq = seq
    }
}
