import StockroomCore

/// One table of an item's fields, and drafts that give each a value no other draft gives it: every
/// layer an item crosses (the Wire writer and decoder, the fast scanner, both stores, the feed, the
/// snapshot, the SDK) is tested with these drafts, and `Mirror` holds the table to the types. A
/// field added to `Item`, `Draft` or `Color` fails `ItemFieldTableTests` until it is in the table
/// and in these drafts, and then fails the layer that drops it.
public enum ItemFields {
    /// `Item`'s stored properties, in declaration order.
    public static let item = ["id", "name", "color", "status", "version", "createdAt", "updatedAt"]
    /// `Draft`'s stored properties: what a client writes.
    public static let draft = ["name", "color", "status"]
    /// `Color`'s stored properties.
    public static let color = ["name", "red", "green", "blue"]
    /// `Status`'s cases and the labels of their values.
    public static let status = ["inStock": ["quantity"], "outOfStock": ["isOnBackOrder"]]

    /// Valid drafts (names already trimmed, so an item written from one has the draft's fields):
    /// between them, a colour and none, every component at 0, 1 and a fraction, each status case
    /// with each of its values' edges, and names that need escaping in JSON.
    public static let drafts: [Draft] = [
        Draft(
            name: "T\u{00FC}r \"7\" \\ \u{2603} \u{1F3B9}", color: Color(name: "Graphite \u{270E}", red: 0.123456789, green: 1, blue: 0),
            status: .inStock(quantity: 0)),
        Draft(name: "B", color: nil, status: .outOfStock(isOnBackOrder: true)),
        Draft(name: "Most", color: Color(name: "c", red: 0.5, green: 0.25, blue: 0.75), status: .inStock(quantity: ValidDraft.maxQuantity)),
        Draft(name: "Slash / and </script>", color: Color(name: "Zero", red: 0, green: 0, blue: 0), status: .outOfStock(isOnBackOrder: false)),
    ]

    /// The labels of a value's stored properties, as `Mirror` lists them.
    public static func properties(of value: Any) -> [String] {
        Mirror(reflecting: value).children.compactMap(\.label)
    }

    /// A status's case and the labels of its value.
    public static func shape(of status: Status) -> (name: String, labels: [String]) {
        guard let child = Mirror(reflecting: status).children.first, let name = child.label else { return ("", []) }
        let value = Mirror(reflecting: child.value)
        let labels = value.displayStyle == .tuple ? value.children.compactMap(\.label) : [name]
        return (name, labels)
    }
}
