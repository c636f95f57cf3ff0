extension SyncedStore {
    /// How a store connects and retries.
    public struct Options: Sendable {
        /// How the feed follows the server.
        public var feed: FeedOptions
        /// Waits between attempts to deliver a write while the server does not answer, or answers
        /// `503` or `429` (whose `Retry-After` is waited out when it is longer).
        public var writeBackoff: Backoff
        /// How many times a write is sent while the server answers it with a server error (500,
        /// 502, 504: not 503 or 429, which say when to come back, nor no answer at all, which is
        /// being offline): after that it leaves the queue and lands in `failedWrites` with the last
        /// answer, and the writes behind it go on.
        public var serverErrorAttempts: Int

        /// Creates options.
        public init(
            feed: FeedOptions = FeedOptions(), writeBackoff: Backoff = Backoff(initial: .milliseconds(250), maximum: .seconds(5)),
            serverErrorAttempts: Int = 8
        ) {
            self.feed = feed
            self.writeBackoff = writeBackoff
            self.serverErrorAttempts = max(1, serverErrorAttempts)
        }
    }
}
