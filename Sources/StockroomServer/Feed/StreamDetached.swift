import NIOCore

/// Thrown by a streamed body once it has parked its response (`ProtocolSwitchHandler.park`), so
/// that Hummingbird's connection task lets go of the connection and ends; the stream goes on.
struct StreamDetached: Error {
    let channel: any Channel
}
