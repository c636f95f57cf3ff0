import Foundation
import Testing
@testable import StockroomCore
@testable import StockroomWire
import TestSupport

/// The answers the server writes with `JSONWriter` besides items and navigations: the same
/// documents `JSONCoding.encoder()` writes, read back by the SDK's decoder, with their keys in
/// declaration order every time (`JSONEncoder` on Linux writes a keyed container's keys in an
/// order that changes from one encode to the next).
@Suite struct AnswerJSONTests {
    static let summary = ItemImportSummary(
        dryRun: false, inserted: 2, updated: 1, unchanged: 0, rejected: 2,
        rejects: [
            .init(line: 3, column: "quantity", code: "validationFailed", message: "quantity is required for an in-stock row"),
            .init(line: 7, column: nil, code: "validationFailed", message: "the row has 3 fields where the header has 2, \"quoted\""),
        ],
        cursor: "c1.f6ff8ac1097ec76cce9c8e46e3dc782e.42")

    static let tokens = TokenList(tokens: [
        TokenInfo(id: "tok_1", user: "alice", role: .admin, createdAt: Fixture.t0, revokedAt: nil),
        TokenInfo(id: "tok_2", user: UserID(stored: "bob \"the\" builder"), role: .viewer, createdAt: Fixture.t0, revokedAt: Fixture.t0.addingTimeInterval(60)),
    ])

    static let newToken = NewToken(id: "tok_3", user: "carol", role: .editor, token: "sr_secret\\/", createdAt: Fixture.t0)
    static let identity = Identity(user: "alice", role: .editor, tokenID: "tok_1")

    @Test func anImportSummaryIsTheEncodersDocumentInDeclarationOrder() throws {
        let written = Data(Self.summary.jsonBytes)
        #expect(try JSON.parse(written) == JSON.parse(try JSONCoding.encoder().encode(Self.summary)))
        #expect(try JSONCoding.decoder().decode(ItemImportSummary.self, from: written) == Self.summary)
        #expect(
            String(decoding: written, as: UTF8.self)
                == #"{"dryRun":false,"inserted":2,"updated":1,"unchanged":0,"rejected":2,"rejects":[{"line":3,"column":"quantity","code":"validationFailed","message":"quantity is required for an in-stock row"},{"line":7,"column":null,"code":"validationFailed","message":"the row has 3 fields where the header has 2, \"quoted\""}],"cursor":"c1.f6ff8ac1097ec76cce9c8e46e3dc782e.42"}"#
        )
        let empty = ItemImportSummary(dryRun: true, inserted: 0, updated: 0, unchanged: 0, rejected: 0, rejects: [], cursor: "c1.x.0")
        #expect(try JSONCoding.decoder().decode(ItemImportSummary.self, from: Data(empty.jsonBytes)) == empty)
    }

    @Test func tokensAreTheEncodersDocuments() throws {
        let list = Data(Self.tokens.jsonBytes)
        #expect(try JSON.parse(list) == JSON.parse(try JSONCoding.encoder().encode(Self.tokens)))
        #expect(try JSONCoding.decoder().decode(TokenList.self, from: list) == Self.tokens)
        #expect(String(decoding: TokenList(tokens: []).jsonBytes, as: UTF8.self) == #"{"tokens":[]}"#)

        let created = Data(Self.newToken.jsonBytes)
        #expect(try JSON.parse(created) == JSON.parse(try JSONCoding.encoder().encode(Self.newToken)))
        #expect(try JSONCoding.decoder().decode(NewToken.self, from: created) == Self.newToken)
        #expect(
            String(decoding: created, as: UTF8.self)
                == #"{"id":"tok_3","user":"carol","role":"editor","token":"sr_secret\\/","createdAt":"\#(Timestamp.format(Fixture.t0))"}"#)
    }

    @Test func anIdentityAndAStatusAreTheEncodersDocuments() throws {
        let identity = Data(Self.identity.jsonBytes)
        #expect(try JSON.parse(identity) == JSON.parse(try JSONCoding.encoder().encode(Self.identity)))
        #expect(String(decoding: identity, as: UTF8.self) == #"{"user":"alice","role":"editor","tokenID":"tok_1"}"#)
        #expect(String(decoding: StatusBody.ok.jsonBytes, as: UTF8.self) == #"{"status":"ok"}"#)
    }
}
