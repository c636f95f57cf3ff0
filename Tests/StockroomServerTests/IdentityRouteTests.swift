import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import StockroomCore
import StockroomServer
import Synchronization
import Testing

@Suite("User identity over HTTP, and what reaches logs")
struct IdentityRouteTests {
    /// "José" typed in NFC or NFD is one user; the second token reads the first one's device.
    @Test func tokensForCanonicallyEquivalentNamesActForOneUser() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let nfc = try await client.send(.post, "/v1/tokens", token: app.admin, json: #"{"user":"Jos\u00e9","role":"editor"}"#)
                let nfd = try await client.send(.post, "/v1/tokens", token: app.admin, json: #"{"user":"Jose\u0301","role":"editor"}"#)
                #expect([nfc.status, nfd.status] == [.created, .created])
                let first = try #require(try nfc.json["token"] as? String)
                let second = try #require(try nfd.json["token"] as? String)
                #expect(Array((try nfd.json["user"] as? String ?? "").utf8) == Array("Jos\u{E9}".utf8))

                let opened = try await client.send(
                    .post, "/v1/clients/jose-phone/commands", token: first, json: #"{"command":{"openAdd":{}}}"#)
                #expect(opened.status == .ok)
                #expect(try await client.send(.get, "/v1/clients/jose-phone/navigation", token: second).status == .ok)
            }
        }
    }

    @Test(arguments: [
        #"{"user":"bo\u0007b\u001b[31m","role":"viewer"}"#, #"{"user":"alice\u0000x","role":"viewer"}"#,
        #"{"user":"rtl\u200fmark","role":"viewer"}"#, #"{"user":"   ","role":"viewer"}"#,
    ])
    func usersOutsideTheRuleAre422NamingTheField(body: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let before = try await app.database.listTokens().count
                let response = try await client.send(.post, "/v1/tokens", token: app.admin, json: body)
                #expect(response.status == .unprocessableContent)
                #expect(response.errorCode == "validationFailed")
                #expect(try response.json["error"].flatMap { ($0 as? [String: Any])?["field"] as? String } == "user")
                #expect(try await app.database.listTokens().count == before)
            }
        }
    }

    @Test func terminalSafeEscapesControlAndBidiCharacters() {
        #expect("bo\u{7}b\u{1B}[31m".terminalSafe == #"bo\u{7}b\u{1B}[31m"#)
        #expect("tab\tnew\nline\u{7F}\u{85}".terminalSafe == #"tab\u{9}new\u{A}line\u{7F}\u{85}"#)
        #expect("evil\u{202E}txt.exe".terminalSafe == #"evil\u{202E}txt.exe"#)
        #expect("José 😀 李".terminalSafe == "José 😀 李")
    }

    @Test func theLogHandlerEscapesMessagesAndMetadata() {
        let sink = RecordingLogHandler()
        var logger = Logger(label: "test") { _ in TerminalSafeLogHandler(wrapping: sink) }
        logger[metadataKey: "user"] = "bo\u{7}b\u{1B}[31m"
        // Escaped when written, not when set (Hummingbird sets a request id per request).
        logger[metadataKey: "request"] = .stringConvertible(ControlDescription())
        logger.info("created \u{1B}]0;title\u{7}", metadata: ["name": "a\u{0}b", "list": ["x\u{1B}"], "object": ["k": "\u{9B}2J"]])
        let line = sink.recorded.value.withLock { $0.joined() }
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        #expect(line.contains(#"bo\u{7}b\u{1B}[31m"#))
        #expect(line.contains(#"created \u{1B}]0;title\u{7}"#))
        #expect(line.contains(#"a\u{0}b"#))
        #expect(line.contains(#"request=r\u{1B}[2Jq"#))
    }
}

/// A metadata value whose description holds a terminal control sequence.
struct ControlDescription: CustomStringConvertible, Sendable {
    var description: String { "r\u{1B}[2Jq" }
}

/// Collects what reaches the end of a logger's handler chain.
struct RecordingLogHandler: LogHandler {
    final class Lines: Sendable {
        let value = Mutex<[String]>([])
    }
    let recorded = Lines()
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let text = "\(event.message) " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        recorded.value.withLock { $0.append(text) }
    }
}
