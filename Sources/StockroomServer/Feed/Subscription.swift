import StockroomStorage

extension FeedController {
    /// A feed request's parsed parameters.
    struct Subscription: Sendable {
        let filter: FeedFilter
        let seq: Int64
    }
}
