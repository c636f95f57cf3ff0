import Foundation
import StockroomCore

/// What became of one item of a batch create.
public enum ItemCreation: Sendable {
    /// Created: the new item.
    case created(Item)
    /// Refused, alone (the batch's other items are unaffected): `alreadyExists` or a validation failure.
    case refused(StoreError)
}
