import Crypto
import Foundation
import HTTPTypes
import HummingbirdWebSocket
import NIOWebSocket
import Synchronization

/// A WebSocket upgrade request being decided: the WebSocket route accepts it with a handler, or
/// `ErrorMiddleware` refuses it with the error it would have answered.
final class WebSocketUpgrade: Sendable {
    /// What runs on the upgraded connection.
    typealias Handler = @Sendable (WebSocketInboundStream, WebSocketOutboundWriter, WebSocketSessionContext) async throws -> Void

    enum Decision: Sendable {
        case accept(Handler)
        case refuse(APIError)
    }

    /// Thrown by the responder once it has taken the connection over, so that Hummingbird closes it afterwards.
    struct ConnectionSwitched: Error {}

    private let state = Mutex<Decision?>(nil)

    /// Upgrades and runs `handler`.
    func accept(_ handler: @escaping Handler) { state.withLock { $0 = .accept(handler) } }
    /// Upgrades and closes with the error's close code and body.
    func refuse(_ error: APIError) { state.withLock { $0 = .refuse(error) } }
    var decision: Decision? { state.withLock { $0 } }

    /// Whether a request asks to switch to WebSocket (`Connection: upgrade` and `Upgrade: websocket`).
    static func isRequested(_ head: HTTPRequest) -> Bool {
        func tokens(_ name: HTTPField.Name) -> [String] {
            head.headerFields[values: name].flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        }
        return head.method == .get && tokens(.connection).contains("upgrade") && tokens(.upgrade).contains("websocket")
    }

    static let keyHeader = HTTPField.Name("Sec-WebSocket-Key")!
    static let versionHeader = HTTPField.Name("Sec-WebSocket-Version")!

    /// `Sec-WebSocket-Accept` for a valid handshake (version 13, a key of 16 bytes in base64), else nil.
    static func acceptValue(_ head: HTTPRequest) -> String? {
        guard head.headerFields[versionHeader] == "13", let key = head.headerFields[keyHeader]?.trimmingCharacters(in: .whitespaces),
            Data(base64Encoded: key)?.count == 16
        else { return nil }
        let digest = Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
        return Data(digest).base64EncodedString()
    }

    /// The plain HTTP error for a handshake that cannot be finished (RFC 6455 4.2.2).
    static func handshakeError(_ head: HTTPRequest) -> APIError {
        guard head.headerFields[versionHeader] == "13" else {
            var error = APIError(.upgradeRequired, "Sec-WebSocket-Version must be 13")
            error.headers[versionHeader] = "13"
            return error
        }
        return APIError.invalidParameter("Sec-WebSocket-Key", "Sec-WebSocket-Key must be 16 bytes in base64")
    }

    /// The close code for an error: `4000 + status` (4401, 4410, ...).
    static func closeCode(for error: APIError) -> WebSocketErrorCode {
        WebSocketErrorCode(codeNumber: 4000 + error.status.code)
    }

    /// The close reason for an error: its JSON body, within the 123 bytes a close frame allows.
    static func closeReason(for error: APIError) -> String { error.json(maxBytes: 123) }

    /// Closes a WebSocket with a contract error: code `4000 + status`, the error body as the reason.
    /// Every refusal and every error that ends a WebSocket goes through here.
    ///
    /// The close frame waits `closeDelay` first. A refusal (a `410` cursor, a cap) comes right
    /// after the `101`, and WSCore ends the connection's output as it sends the close frame: a
    /// client still in its HTTP upgrade when the `101`, the close frame and the end of the stream
    /// reach it together can lose the last two (swift-nio's client upgrade, which the SDK's
    /// WebSocket client runs on, can), and would then wait for an unanswered ping before trying
    /// again, without the refusal that says why.
    static func close(_ outbound: WebSocketOutboundWriter, with error: APIError) async throws {
        try? await Task.sleep(for: closeDelay)
        try await outbound.close(closeCode(for: error), reason: closeReason(for: error))
    }

    /// How long a close for an error waits after what came before it (see `close(_:with:)`).
    static let closeDelay: Duration = .milliseconds(50)
}
