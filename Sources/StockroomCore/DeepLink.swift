/// A link to a screen of the app, by URL (Navigator's `send`, swift-navigation's deep links):
///
/// ```
/// stockroom://TAB[/items/ID]*[/new | /edit[/ID] | /duplicate[/ID] | /delete[/ID]]
/// ```
///
/// TAB is `inventory` or `settings`; each `/items/ID` pushes that item's detail screen; the last
/// segment opens the add sheet, or the edit, duplicate or delete alert of the item it names (by
/// default the last item pushed). `openURL` applies one; every navigation state answers with its
/// canonical one, so a link to a screen round-trips.
public struct DeepLink: Hashable, Sendable, CustomStringConvertible {
    /// What the link opens over the path.
    public enum Action: Hashable, Sendable {
        case add
        case edit(ItemID)
        case duplicate(ItemID)
        case delete(ItemID)

        /// The item the action is about, if any.
        public var itemID: ItemID? {
            switch self {
            case .add: nil
            case .edit(let id), .duplicate(let id), .delete(let id): id
            }
        }
    }

    /// The tab.
    public var tab: Tab
    /// The items pushed, root first.
    public var path: [ItemID]
    /// The destination opened, if any.
    public var action: Action?

    /// The scheme every link has.
    public static let scheme = "stockroom"
    /// The longest link accepted, in UTF-8 bytes: a full path of ids and an action fit.
    public static let maxBytes = 2048

    /// Creates a link.
    public init(tab: Tab = .inventory, path: [ItemID] = [], action: Action? = nil) {
        self.tab = tab
        self.path = path
        self.action = action
    }

    /// The canonical link of `state`: its tab, path and kind of destination (a conflict links to
    /// its edit); checkpoints and drafts are not part of it.
    public init(_ state: NavigationState) {
        let action: Action? =
            switch state.destination {
            case nil: nil
            case .add: .add
            case .edit(let id, _, _), .conflict(let id, _, _, _, _): .edit(id)
            case .duplicate(let id, _): .duplicate(id)
            case .deleteAlert(let id, _): .delete(id)
            }
        self.init(tab: state.tab, path: state.path.map(\.itemID), action: action)
    }

    /// Parses `url`; `validationFailed` on `url`, naming the part that is wrong, when it is not a link of the grammar.
    public init(parsing url: String) throws(DomainError) {
        func refuse(_ message: String) -> DomainError { .validationFailed(field: "url", message: message) }
        guard url.utf8.count <= Self.maxBytes else { throw refuse("url must be at most \(Self.maxBytes) UTF-8 bytes") }
        let prefix = "\(Self.scheme)://"
        guard url.hasPrefix(prefix) else {
            throw refuse("url must start with \(prefix) (stockroom://TAB[/items/ID]*[/new|/edit|/duplicate|/delete])")
        }
        if let extra = url.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            throw refuse("url has \"\(String(url[extra...]).terminalSafe)\" after its path; a link has no query or fragment")
        }
        let segments = url.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard let tab = Tab(rawValue: segments[0]) else {
            throw refuse("tab \"\(segments[0].terminalSafe)\" is not one of inventory, settings")
        }
        var path: [ItemID] = []
        var action: Action?
        var index = 1
        func itemID(at index: Int, after segment: String) throws(DomainError) -> ItemID {
            guard index < segments.count else { throw refuse("segment \(index) (after /\(segment)) is missing: an item id") }
            guard let id = ItemID(segments[index]) else {
                throw refuse("segment \(index + 1), \"\(segments[index].terminalSafe)\", is not an item id (a UUID)")
            }
            return id
        }
        while index < segments.count {
            let segment = segments[index]
            let position = index + 1
            switch segment {
            case "items":
                guard action == nil else { throw refuse("segment \(position), \"items\", follows an action; the action comes last") }
                path.append(try itemID(at: index + 1, after: segment))
                guard path.count <= NavigationState.maxPathDepth else {
                    throw refuse("url pushes more than \(NavigationState.maxPathDepth) items")
                }
                index += 2
            case "new", "edit", "duplicate", "delete":
                guard action == nil else { throw refuse("segment \(position), \"\(segment)\", follows another action") }
                if segment == "new" {
                    action = .add
                    index += 1
                    continue
                }
                let id: ItemID
                if index + 1 < segments.count {
                    id = try itemID(at: index + 1, after: segment)
                    index += 2
                } else if let last = path.last {
                    id = last
                    index += 1
                } else {
                    throw refuse("segment \(position), \"\(segment)\", needs an item: /items/ID before it or /ID after it")
                }
                action =
                    switch segment {
                    case "edit": .edit(id)
                    case "duplicate": .duplicate(id)
                    default: .delete(id)
                    }
            default:
                throw refuse(
                    "segment \(position), \"\(segment.terminalSafe)\", is not one of items, new, edit, duplicate, delete")
            }
        }
        self.init(tab: tab, path: path, action: action)
    }

    /// The link as a URL, in its shortest form.
    public var description: String {
        var url = "\(Self.scheme)://\(tab.rawValue)"
        for id in path { url += "/items/\(id)" }
        func named(_ segment: String, _ id: ItemID) -> String { id == path.last ? "/\(segment)" : "/\(segment)/\(id)" }
        switch action {
        case nil: break
        case .add: url += "/new"
        case .edit(let id): url += named("edit", id)
        case .duplicate(let id): url += named("duplicate", id)
        case .delete(let id): url += named("delete", id)
        }
        return url
    }

    /// Every item the link names, in order of first mention.
    public var itemIDs: [ItemID] {
        var seen = Set<ItemID>()
        return (path + [action?.itemID].compactMap { $0 }).filter { seen.insert($0).inserted }
    }
}
