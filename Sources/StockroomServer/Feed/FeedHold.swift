import StockroomCore
import Synchronization

/// What every open feed request holds until it ends, whatever its transport: a subscriber lease
/// (the caps, taken by the transport where its refusal can still be said: a status before the
/// response, a close code after the WebSocket upgrade), its device marked online (`clientID=`)
/// and its transport's subscriber gauge. `release()` gives all three back, once.
final class FeedHold: Sendable {
    private let released = Atomic<Bool>(false)
    private let lease: SubscriberLimits.Lease
    private let device: PresenceTracker.Hold?
    private let transport: FeedTransport

    init(lease: SubscriberLimits.Lease, device: ClientID?, user: UserID, presence: PresenceTracker, transport: FeedTransport) {
        self.lease = lease
        self.device = device.map { presence.open($0, user: user) }
        self.transport = transport
        FeedController.subscribers.increment(transport: transport)
    }

    func release() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        FeedController.subscribers.decrement(transport: transport)
        device?.release()
        lease.release()
    }
}
