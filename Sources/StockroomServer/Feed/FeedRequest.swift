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

    /// `topics=`: `400 invalidParameter` unless a comma-separated list of topic names; nil when absent.
    static func topics(_ request: Request) throws -> Set<ChangeEntity>? {
        guard let raw = try request.query("topics") else { return nil }
        var topics = Set<ChangeEntity>()
        for name in raw.split(separator: ",", omittingEmptySubsequences: false) {
            guard let topic = Topic(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                throw APIError.invalidParameter("topics", "topics must be a comma-separated list of items, navigation and presence")
            }
            topics.insert(topic.entity)
        }
        return topics
    }

    /// An item filter parameter (`filter`, `fromFilter`), parsed and checked once: nil when absent;
    /// `422 validationFailed` naming its position when it is not the grammar's.
    static func itemFilter(_ request: Request, name: String) throws -> ItemFilter? {
        try itemFilter(filterText(request, name: name), name: name)
    }

    /// The text of filter `name` (`filter`, `fromFilter`): `400` when its escapes do not decode
    /// (the grammar would read them as text, and name a position the client never wrote).
    static func filterText(_ request: Request, name: String) throws -> String? {
        do {
            return try request.uri.decodedFormValue(name)
        } catch .repeated {
            throw APIError.repeatedParameter(name)
        } catch .undecodable {
            throw APIError.invalidParameter(name, "\(name) is not percent-encoded UTF-8 (a % of the filter's own is %25)")
        }
    }

    /// The filter `text` reads as: `422` outside the grammar.
    static func itemFilter(_ text: String?, name: String) throws -> ItemFilter? {
        guard let text else { return nil }
        do {
            return try ItemFilter(parsing: text)
        } catch {
            throw refusal(error, name: name)
        }
    }

    /// A bad filter's answer: `422 validationFailed` on the parameter, naming the position.
    static func refusal(_ error: ItemFilterError, name: String) -> APIError {
        APIError.validationFailed(name, "\(name): at character \(error.position), expected \(error.expected)")
    }

    /// A feed request's parameters, the same for every transport, checked in the contract's order:
    /// each malformed one (`topics`, the cursor, `clientID`) is a 400 before the device of another
    /// user is a 404, and that before a filter outside the grammar is a 422.
    struct Parameters {
        let topics: Set<ChangeEntity>?
        let start: FeedStart
        let clientID: ClientID?
        /// `filter=` as text, its grammar not yet checked.
        let filterText: String?
    }

    /// The 400s of a feed request: its topics, cursor, device and filter text, each well-formed.
    func parameters(of request: Request, lastEventID: String? = nil) throws -> Parameters {
        let topics = try Self.topics(request)
        let start = try start(of: request, lastEventID: lastEventID)
        let clientID = try request.query("clientID").map { try ClientID.required(ClientID($0)) }
        let filterText = try Self.filterText(request, name: "filter")
        return Parameters(topics: topics, start: start, clientID: clientID, filterText: filterText)
    }

    /// The device a feed request names (`clientID=`), which it marks online while open: `404` when
    /// it is another user's.
    func device(_ clientID: ClientID?, user: UserID) async throws -> ClientID? {
        guard let clientID else { return nil }
        _ = try await database.navigation(clientID: clientID, user: user)
        presence.seen(clientID, user: user)
        return clientID
    }

    /// What the request follows: its topics (items and navigation by default) and `filter=`
    /// (`422` when outside the grammar).
    func filter(_ parameters: Parameters, user: UserID) throws -> FeedFilter {
        let items = try Self.itemFilter(parameters.filterText, name: "filter")
        return FeedFilter(user: user, topics: parameters.topics ?? [.item, .navigation], items: items)
    }

    /// A streamed feed request (SSE, WebSocket) checked and resolved: its device and where it starts.
    func parse(_ request: Request, user: UserID, lastEventID: String?) async throws -> (device: ClientID?, start: Subscription) {
        let parameters = try parameters(of: request, lastEventID: lastEventID)
        let device = try await device(parameters.clientID, user: user)
        let filter = try filter(parameters, user: user)
        return (device, try await Subscription.resolve(parameters.start, filter: filter, in: database))
    }
}
