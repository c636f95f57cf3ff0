import NIOCore

/// The time a request's body may take to arrive, kept by `MalformedRequestGuard`, which sees every
/// request's parts and the pipeline's reads.
///
/// A body has `grace` to arrive, plus one second for every `minBytesPerSecond` bytes of it already
/// received (Apache's `RequestReadTimeout body=20,MinRate=500` rule): the idle timeout alone lets a
/// client that sends a byte every few seconds hold its connection, and a request's handler, forever.
/// Only the time the server waits for the client counts, from a read the pipeline asked for to the
/// bytes it delivers: a handler slow to take its body (a busy writer behind it) asks for no reads,
/// and that time is the server's. A request that asked for `100 Continue` starts its clock when its
/// handler asks for the body.
///
/// A body that arrives whole in the read that brought its head (a GET's, most writes') never
/// schedules a check: its end comes before the pipeline asks for the next read, where the check is
/// scheduled.
struct BodyClock {
    let grace: TimeAmount
    let minBytesPerSecond: Int

    /// A request's head came and its end has not.
    private(set) var receiving = false
    /// The clock runs (false while a request waits for its `100 Continue`).
    private var counting = false
    /// The body's bytes so far.
    private var received = 0
    /// The time spent waiting for the client, over reads that delivered.
    private var waited = TimeAmount.zero
    /// When the read now outstanding was asked for, if one is.
    private var readAskedAt: NIODeadline?
    /// The check at the time the body runs out, once scheduled.
    private var check: Scheduled<Void>?

    init(grace: Duration, minBytesPerSecond: Int) {
        self.grace = .seconds(grace.components.seconds)
        self.minBytesPerSecond = minBytesPerSecond
    }

    /// A request's head came: its clock starts now, or, if it waits for `100 Continue`, at `continued`.
    mutating func head(waitsToContinue: Bool) {
        stop()
        receiving = true
        received = 0
        waited = .zero
        counting = !waitsToContinue
    }

    /// Bytes of the body came, ending the wait of the read that asked for them.
    mutating func body(_ count: Int) {
        guard receiving else { return }
        received += count
        if let asked = readAskedAt {
            waited = waited + (.now() - asked)
            readAskedAt = nil
        }
    }

    /// The pipeline asked for a read: the client is waited for from now.
    mutating func readAsked() {
        if receiving, counting, readAskedAt == nil { readAskedAt = .now() }
    }

    /// The request's handler asked for its body (its `100 Continue` goes out): the clock starts.
    mutating func continued() {
        guard receiving, !counting else { return }
        counting = true
        readAskedAt = .now()
    }

    /// Whether the clock runs with no check scheduled.
    var wantsCheck: Bool { receiving && counting && check == nil }

    /// Schedules the check for when the body's allowance runs out: `due` runs then, on `loop`.
    mutating func arm(on loop: any EventLoop, due: @escaping () -> Void) {
        guard wantsCheck else { return }
        check = loop.scheduleTask(in: max(left(now: .now()), .zero)) { due() }
    }

    /// The scheduled check ran: whether the body is over its allowance (the clock then stops).
    /// If it is not, `arm` schedules the next check.
    mutating func expired() -> Bool {
        check = nil
        guard receiving, counting, left(now: .now()) <= .zero else { return false }
        stop()
        return true
    }

    /// The body ended (or the request is gone): the clock stops.
    mutating func stop() {
        receiving = false
        counting = false
        readAskedAt = nil
        check?.cancel()
        check = nil
    }

    /// The body's allowance less the time already waited for it.
    private func left(now: NIODeadline) -> TimeAmount {
        allowance - waited - (readAskedAt.map { now - $0 } ?? .zero)
    }

    /// `grace`, and a second for every `minBytesPerSecond` bytes received: whole seconds and the
    /// rest apart, and the seconds capped at 2^30 (34 years), so that no body of any length (an
    /// import may be 64 GiB) overflows a `TimeAmount`'s 64-bit nanoseconds.
    var allowance: TimeAmount {
        let seconds = min(received / minBytesPerSecond, 1 << 30)
        let rest = Int64(received % minBytesPerSecond) * 1_000_000_000 / Int64(minBytesPerSecond)
        return grace + .seconds(Int64(seconds)) + .nanoseconds(rest)
    }

    /// The error a request's body stream ends with when its body came too slowly: `408 requestTimeout`.
    struct TooSlow: Error {
        let grace: TimeAmount
        let minBytesPerSecond: Int
        var message: String {
            "the request's body came too slowly: a body has \(grace.nanoseconds / 1_000_000_000) s, "
                + "and one more second for every \(minBytesPerSecond) bytes it has sent"
        }
    }
}
