import Foundation

/// How a ``ChangeFeed`` follows the server.
public struct FeedOptions: Hashable, Sendable {
    /// The entities to follow.
    public var topics: Set<Topic>
    /// The device the feed is for, if any: the server marks it online while the stream is open
    /// (`clientID=`), and counts the stream as the device being seen.
    public var clientID: ClientID?
    /// A stream with no byte for this long (the server sends a heartbeat every 15 s by default) is
    /// taken as dropped and reconnected.
    public var heartbeatTimeout: Duration
    /// Waits between reconnection attempts.
    public var backoff: Backoff
    /// The items to follow (`filter=`); nil for every item. Under a filter the snapshot holds only
    /// the matching items, and an item that starts or stops matching arrives as a change with
    /// `move` set (`Change.move`).
    public var filter: ItemFilter?
    /// How the feed reaches the server: Server-Sent Events (the default), a WebSocket, or long-polls.
    /// Each delivers the same changes in the same order, and resumes from the same cursor.
    public var transport: FeedTransport

    /// Creates feed options.
    public init(
        topics: Set<Topic> = Set(Topic.allCases), clientID: ClientID? = nil, heartbeatTimeout: Duration = .seconds(45),
        backoff: Backoff = Backoff(initial: .milliseconds(250), maximum: .seconds(5)), filter: ItemFilter? = nil,
        transport: FeedTransport = .serverSentEvents
    ) {
        self.filter = filter
        self.transport = transport
        self.topics = topics
        self.clientID = clientID
        self.heartbeatTimeout = heartbeatTimeout
        self.backoff = backoff
    }
}
