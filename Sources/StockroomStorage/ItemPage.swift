import Foundation
import StockroomCore
import StockroomWire

/// One page of items in creation order.
public struct ItemPage: Sendable, Hashable {
    /// The items of the page.
    public var items: [Item]
    /// Where the next page starts, nil on the last page.
    public var next: PageCursor?

    public init(items: [Item], next: PageCursor?) {
        self.items = items
        self.next = next
    }
}
