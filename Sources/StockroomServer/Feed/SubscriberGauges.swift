/// Subscribers per transport, as gauges.
final class SubscriberGauges: Sendable {
    private let gauges: [FeedTransport: CountGauge] = Dictionary(
        uniqueKeysWithValues: FeedTransport.allCases.map {
            ($0, CountGauge(label: "stockroom_feed_subscribers", dimensions: [("transport", $0.rawValue)]))
        })

    func increment(transport: FeedTransport) { gauges[transport]?.add(1) }
    func decrement(transport: FeedTransport) { gauges[transport]?.add(-1) }
}
