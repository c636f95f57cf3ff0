import Hummingbird
import StockroomCore
import StockroomStorage
import StockroomWire

/// A feed request's parameters, parsed and checked once, the same for every transport: the
/// cursor (`since`, `Last-Event-ID`), `topics` and the device (`clientID`).
extension FeedController {
    /// Where the request starts: `Last-Event-ID` wins over `since`; none means the beginning of the log.
    /// Both are checked even when `Last-Event-ID` wins: a malformed `since` is a bad request either way.
    func start(of request: Request, lastEventID: String? = nil) throws -> FeedStart {
        let since = try request.query("since").map { try Self.parseStart($0, field: "since") }
        if let lastEventID { return try Self.parseStart(lastEventID, field: "Last-Event-ID") }
        return since ?? .beginning
    }

    static func parseStart(_ raw: String, field: String) throws -> FeedStart {
        if raw == "now" { return .now }
        if raw == "oldest" { return .oldest }
        guard let cursor = FeedCursor(encoded: raw) else { throw APIError.invalidParameter(field, "not a valid feed cursor") }
        return .after(cursor)
    }

    func filter(_ request: Request, user: UserID) throws -> FeedFilter {
        let items = try Self.itemFilter(request, name: "filter")
        guard let raw = request.query("topics") else { return FeedFilter(user: user, topics: [.item, .navigation], items: items) }
        var topics = Set<ChangeEntity>()
        for name in raw.split(separator: ",", omittingEmptySubsequences: false) {
            guard let topic = Topic(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                throw APIError.invalidParameter("topics", "topics must be a comma-separated list of items, navigation and presence")
            }
            topics.insert(topic.entity)
        }
        return FeedFilter(user: user, topics: topics, items: items)
    }

    /// An item filter parameter (`filter`, `fromFilter`), parsed and checked once: nil when absent;
    /// `422 validationFailed` naming its position when it is not the grammar's.
    static func itemFilter(_ request: Request, name: String) throws -> ItemFilter? {
        guard let raw = request.query(name) else { return nil }
        do {
            return try ItemFilter(parsing: raw)
        } catch {
            throw refusal(error, name: name)
        }
    }

    /// A bad filter's answer: `422 validationFailed` on the parameter, naming the position.
    static func refusal(_ error: ItemFilterError, name: String) -> APIError {
        APIError.validationFailed(name, "\(name): at character \(error.position), expected \(error.expected)")
    }

    /// The device a feed request names (`clientID=`), which it marks online while open; `400` when
    /// malformed, `404` when it is another user's.
    func device(of request: Request, user: UserID) async throws -> ClientID? {
        guard let raw = request.query("clientID") else { return nil }
        guard let clientID = ClientID(raw) else { throw APIError.invalidParameter("clientID", ClientID.rule) }
        _ = try await database.navigation(clientID: clientID, user: user)
        presence.seen(clientID, user: user)
        return clientID
    }

    func parse(_ request: Request, user: UserID, lastEventID: String?) async throws -> Subscription {
        let filter = try filter(request, user: user)
        let start = try start(of: request, lastEventID: lastEventID)
        return try await Subscription.resolve(start, filter: filter, in: database)
    }
}
