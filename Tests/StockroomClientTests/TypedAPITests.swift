import Foundation
@testable import StockroomClient
import Testing

@Suite("The typed API against a live server", .timeLimit(.minutes(10)))
struct TypedAPITests {
    /// A long-poll's wait goes in whole seconds, a part of one rounded up: never shorter than asked.
    @Test func aWaitIsSentInWholeSecondsRoundedUp() {
        #expect(StockroomClient.waitParameter(.seconds(5)) == "5")
        #expect(StockroomClient.waitParameter(.milliseconds(1500)) == "2")
        #expect(StockroomClient.waitParameter(.milliseconds(500)) == "1")
        #expect(StockroomClient.waitParameter(.zero) == "0")
    }

    @Test func itemsPageAsAnAsyncSequenceAndWritesCarryTheirETag() async throws {
        try await withServer { server in
            let client = try server.client()
            var created: [Item] = []
            for index in 0..<7 { created.append(try await client.createItem(.named("Item \(index)", quantity: index))) }

            var pages: [[Item]] = []
            for try await page in client.items(pageSize: 3) { pages.append(page) }
            #expect(pages.map(\.count) == [3, 3, 1])
            #expect(pages.flatMap { $0 } == created)
            #expect(try await client.allItems(matching: "item 6") == [created[6]])
            #expect(try await client.allItems(inStock: true).count == 7)

            // The version travels as If-Match: a stale one is 412 with the server's current item.
            let updated = try await client.updateItem(created[0], with: .named("Renamed"))
            #expect(updated.version == 2 && updated.name == "Renamed")
            let stale = try await #require(throws: StockroomError.self) { try await client.updateItem(created[0], with: .named("Again")) }
            #expect(stale.status == 412 && stale.code == .preconditionFailed)
            #expect(stale.currentItem == updated)
            let staleDelete = try await #require(throws: StockroomError.self) { try await client.deleteItem(created[0]) }
            #expect(staleDelete.code == .preconditionFailed && staleDelete.currentItem == updated)
            try await client.deleteItem(updated)
            let missing = try await #require(throws: StockroomError.self) { try await client.item(updated.id) }
            #expect(missing.status == 404 && missing.code == .notFound)

            // Creating with an id that ever existed is refused; an empty name names its field.
            let exists = try await #require(throws: StockroomError.self) { try await client.createItem(.named("X"), id: updated.id) }
            #expect(exists.code == .alreadyExists)
            let empty = try await #require(throws: StockroomError.self) { try await client.createItem(.named("  ")) }
            #expect(empty.status == 422 && empty.code == .validationFailed && empty.field == "name")

            // The same idempotency key answers with the first answer.
            let once = try await client.createItem(.named("Once"), idempotencyKey: "create-once")
            #expect(try await client.createItem(.named("Once"), idempotencyKey: "create-once") == once)
            let reused = try await #require(throws: StockroomError.self) {
                try await client.createItem(.named("Other"), idempotencyKey: "create-once")
            }
            #expect(reused.code == .idempotencyKeyReused)
        }
    }

    @Test func navigationCommandsAndDevices() async throws {
        try await withServer { server in
            let client = try server.client()
            #expect(try await client.navigation(of: "phone") == .unwritten(clientID: "phone"))
            let item = try await client.createItem(.named("Mug"))
            let opened = try await client.send(.openEdit(itemID: item.id), from: "phone")
            #expect(opened.navigation.state.destination == .edit(itemID: item.id, baseVersion: 1, draft: item.draft))
            #expect(!opened.replayed)
            let handedOff = try await client.continue("laptop", from: "phone")
            #expect(handedOff.navigation.state == opened.navigation.state)
            #expect(try await client.devices().map(\.clientID) == ["laptop", "phone"])

            let put = try await client.putNavigation(NavigationState(tab: .settings), of: "phone", ifVersion: 1)
            #expect(put.version == 2 && put.state.tab == .settings)
            let stale = try await #require(throws: StockroomError.self) {
                try await client.putNavigation(NavigationState(), of: "phone", ifVersion: 1)
            }
            #expect(stale.code == .preconditionFailed && stale.currentNavigation == put)

            let invalid = try await #require(throws: StockroomError.self) { try await client.send(.pop, from: "phone") }
            #expect(invalid.code == .invalidTransition && invalid.status == 409)
            // Someone else's device does not exist for this user.
            let other = try await #require(throws: StockroomError.self) {
                try await server.client(token: server.viewer).navigation(of: "phone")
            }
            #expect(other.code == .notFound)
        }
    }

    @Test func tokensIdentityAndTheSnapshotAndBatchFeed() async throws {
        try await withServer { server in
            let admin = try server.client(token: server.admin)
            let identity = try await admin.identity()
            #expect(identity.user == "ada" && identity.role == .admin && identity.tokenID.rawValue.hasPrefix("tok_"))
            let created = try await admin.createToken(user: "nina", role: .editor)
            #expect(try await admin.tokens().contains { $0.id == created.id && $0.user == "nina" && $0.revokedAt == nil })
            let nina = try server.client(token: created.token)
            let item = try await nina.createItem(.named("Nina's"))
            let snapshot = try await nina.snapshot()
            #expect(snapshot.items == [item] && snapshot.navigation.isEmpty)
            let batch = try await nina.changes(from: .beginning)
            #expect(batch.changes.map(\.item) == [item] && !batch.hasMore)
            #expect(try await nina.changes(from: .after(snapshot.cursor)).changes.isEmpty)

            try await admin.revokeToken(id: created.id)
            let revoked = try await #require(throws: StockroomError.self) { try await nina.snapshot() }
            #expect(revoked.status == 401 && revoked.code == .unauthorized)
            let forbidden = try await #require(throws: StockroomError.self) { try await server.client().tokens() }
            #expect(forbidden.code == .forbidden)
            let gone = try await #require(throws: StockroomError.self) {
                try await admin.changes(from: .after(FeedCursor(epoch: "0000000000000000", seq: 999)))
            }
            #expect([400, 410].contains(gone.status))
        }
    }

    @Test func anUnreachableServerIsATransportError() async throws {
        let client = StockroomClient(baseURL: URL(string: "http://127.0.0.1:1")!, token: "sr_none", requestTimeout: .seconds(5))
        let error = try await #require(throws: TransportError.self) { try await client.snapshot() }
        #expect(StockroomClient.isRefusedConnection(try #require(error.underlying)), "refused: \(error)")
        #expect(await client.isHealthy() == false)
    }

    /// The contract's codes (the OpenAPI document's list) are `ErrorCode.known`, which the server answers
    /// from and the SDK reads: neither side can add one alone.
    @Test func everyErrorCodeOfTheContractIsKnownToTheSDK() throws {
        let openAPI = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/StockroomServer/Resources/openapi.yaml")
        let text = try String(contentsOf: openAPI, encoding: .utf8)
        let known = Set(StockroomError.Code.known.map(\.rawValue))
        let named = Self.errorCodes(in: text)
        #expect(!named.isEmpty)
        #expect(named.subtracting(known).isEmpty, "codes the SDK does not know: \(named.subtracting(known).sorted())")
        #expect(known.subtracting(named).isEmpty, "codes the OpenAPI document does not list: \(known.subtracting(named).sorted())")
        for code in StockroomError.Code.known {
            #expect(StockroomError.Code(rawValue: code.rawValue) == code)
        }
        #expect(StockroomError.Code(rawValue: "somethingNew") == .other("somethingNew"))
    }

    /// The `enum` of the error body's `code` in the OpenAPI document.
    static func errorCodes(in yaml: String) -> Set<String> {
        guard let schema = yaml.range(of: "\n    Error:\n"), let range = yaml.range(of: "enum:", range: schema.upperBound..<yaml.endIndex)
        else { return [] }
        var codes = Set<String>()
        let lines = yaml[range.lowerBound...].split(separator: "\n").prefix(60)
        for line in lines.dropFirst() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("- "), !trimmed.contains(":") else { break }
            codes.insert(trimmed.dropFirst(2).trimmingCharacters(in: CharacterSet(charactersIn: " \"'")))
        }
        return codes
    }
}
