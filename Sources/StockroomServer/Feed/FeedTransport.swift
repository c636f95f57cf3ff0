/// How a subscriber follows the feed; the `transport` label of the feed metrics.
enum FeedTransport: String, Sendable, CaseIterable {
    case longPoll = "longpoll"
    case sse
    case webSocket = "ws"
}
