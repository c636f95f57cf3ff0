import StockroomWire
import Hummingbird
import HummingbirdAuth
import NIOCore

/// The request context of every route: Hummingbird's core storage plus, once
/// `BearerTokenAuthenticator` has run, the caller's token.
public struct AppRequestContext: AuthRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The verified token, set by `BearerTokenAuthenticator`.
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
}

/// The context of every route that needs a caller (all of `/v1`): made from the request's context
/// after `BearerTokenAuthenticator`, and refused with `401` when no token was verified, so a
/// handler always has its `caller`.
public struct CallerContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The verified token: who calls, for which user, with which role.
    public let caller: TokenInfo
    var webSocketUpgrade: WebSocketUpgrade?
    public let channel: any Channel

    public init(context: AppRequestContext) throws {
        guard let caller = context.identity else { throw APIError.unauthorized("missing bearer token") }
        self.coreContext = context.coreContext
        self.caller = caller
        self.webSocketUpgrade = context.webSocketUpgrade
        self.channel = context.channel
    }

    public var maxUploadSize: Int { 1 << 20 }
}

/// A request context that knows its connection (for `Request.continueIfAsked`).
protocol ConnectionContext: RequestContext {
    var channel: any Channel { get }
}

extension AppRequestContext: ConnectionContext {}
extension CallerContext: ConnectionContext {}
