import HTTPTypes
import Hummingbird
import NIOCore
import StockroomWire

/// `GET /v1/changes/stream`: Server-Sent Events, served by the parked stream once the response is out.
extension FeedController {
    @Sendable func stream(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        let (device, start) = try await parse(request, user: caller.user, lastEventID: request.headers[Self.lastEventID])
        let lease = try limits.acquire(token: caller.id)
        // Read after the start resolved: the catch-up is the entries from the start up to this head.
        let head = FeedCursor(epoch: database.epoch, seq: max(database.hub.head, start.seq))
        let presence = self.presence
        let database = self.database
        let settings = self.settings
        let streams = self.streams
        let frames = self.frames
        let logger = context.logger
        let channel = context.channel
        return Response(
            status: .ok,
            // The connection ends with the stream: a parked stream has no HTTP loop left to read a next request.
            headers: [
                .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store", .connection: "close",
                Self.headHeader: head.encoded,
            ],
            body: ResponseBody { writer in
                let parked: ParkedResponse?
                do {
                    parked = try await ProtocolSwitchHandler.park(channel: channel)
                } catch {
                    lease.release()
                    throw error
                }
                if let parked {
                    let hold = FeedHold(lease: lease, device: device, user: caller.user, presence: presence, transport: .sse)
                    await ParkedSSEStream.start(
                        database: database, streams: streams, frames: frames, settings: settings, start: start, tokenID: caller.id,
                        response: parked, logger: logger
                    ) {
                        hold.release()
                    }
                    // The stream goes on without this task; Hummingbird's connection task ends.
                    throw StreamDetached(channel: channel)
                }
                // Every connection of the server's pipeline has the parking handler (buildApplication
                // puts it there); one without it (an in-process router) cannot serve the stream.
                lease.release()
                throw NoParkingHandler()
            }
        )
    }

    /// The log's head when the stream opened: the changes up to it are the stream's catch-up.
    static let headHeader = HTTPField.Name("Stockroom-Head")!

    /// An SSE stream asked for on a connection without `ProtocolSwitchHandler`: only a pipeline
    /// other than the server's has none (HummingbirdTesting's in-process router); test the stream
    /// against a live server.
    struct NoParkingHandler: Error {}
}
