import Foundation
import StockroomCore

/// Rewrites a navigation change value stored in change-value form 1 into form 2, the form this
/// contract writes: a `Navigation` with `checkpoints` and `url`, and a delete alert with its
/// alert. Both stores run it over the retained log in the migration that raises
/// `change_value_format` to 2 (SQLite's 0007, PostgreSQL's 0002).
public enum NavigationValueUpgrade {
    /// The form-2 JSON of the form-1 navigation `json`. A delete alert is rendered with the name
    /// `itemName` gives for its item (nil: the item is gone, the alert says "this item").
    public static func rewrite(_ json: String, itemName: (ItemID) throws -> String?) throws -> String {
        var navigation = try JSONCoding.decoder().decode(Navigation.self, from: Data(json.utf8))
        if case .deleteAlert(let id, _) = navigation.state.destination {
            navigation.state.destination = .deleteAlert(itemID: id, alert: .deleteItem(name: try itemName(id)))
        }
        return String(decoding: navigation.jsonBytes, as: UTF8.self)
    }
}
