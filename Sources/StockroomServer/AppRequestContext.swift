import Hummingbird
import NIOCore
import StockroomStore

/// The request context of every route: Hummingbird's core storage plus the caller's identity.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The authenticated token, set by `AuthMiddleware` on `/v1` routes.
    public var identity: TokenInfo?
    /// Set when the request asks to switch to WebSocket: the WebSocket route accepts it, `ErrorMiddleware` refuses it.
    var webSocketUpgrade: WebSocketUpgrade?

    /// The connection, so that streams can see whether it still takes writes.
    public let channel: any Channel

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.identity = nil
        self.channel = source.channel
    }

    /// Request bodies over 1 MiB are refused with 413.
    public var maxUploadSize: Int { 1 << 20 }

    /// The authenticated caller; routes behind `AuthMiddleware` always have one.
    func caller() throws -> TokenInfo {
        guard let identity else { throw APIError.unauthorized("missing bearer token") }
        return identity
    }
}
