import Foundation
import StockroomCore
import TestSupport
import Testing

@testable import StockroomWire

/// Each body the server writes decodes, with the same wire types the SDK uses (`Change`,
/// `ChangeBatch`, `Snapshot`), to the values it was written from; and a writer given bytes read in
/// place writes what it writes from values.
@Suite("Bodies: the server's writers and the SDK's types agree")
struct BodyRoundTripTests {
    static let epoch = "0123456789abcdef0123456789abcdef"
    static let navigation = Navigation(
        clientID: "phone", state: NavigationState(tab: .inventory, path: [Fixture.keyboardRoute], destination: .deleteAlert(for: Fixture.keyboard)),
        version: 3, updatedAt: Fixture.t0)

    static func change(seq: Int64, entity: String, op: String, id: String, value: String?, client: String?, key: String?) -> [UInt8] {
        var json = JSONWriter()
        ChangeJSON.write(
            seq: seq, epoch: epoch.utf8, entity: entity, op: op, id: id, value: value?.utf8, originClientID: client,
            originIdempotencyKey: key, at: 1_795_327_200_123, to: &json)
        return json.bytes
    }

    @Test func aChangeDecodesToWhatItWasWrittenFrom() throws {
        let item = Fixture.mouse
        let bytes = Self.change(
            seq: 7, entity: "item", op: "upsert", id: item.id.description, value: String(decoding: item.jsonBytes, as: UTF8.self),
            client: "phone", key: "k-1")
        let change = try JSONCoding.decoder().decode(Change.self, from: Data(bytes))
        #expect(change == Change(
            seq: 7, cursor: FeedCursor(epoch: Self.epoch, seq: 7), entity: .item, operation: .upsert, id: item.id.description,
            value: .item(item), origin: Change.Origin(clientID: "phone", idempotencyKey: "k-1"), at: Fixture.t0))

        let navigation = try JSONCoding.decoder().decode(Change.self, from: Data(Self.change(
            seq: 8, entity: "navigation", op: "upsert", id: "phone", value: String(decoding: Self.navigation.jsonBytes, as: UTF8.self),
            client: nil, key: nil)))
        #expect(navigation.navigation == Self.navigation && navigation.origin == Change.Origin(clientID: nil, idempotencyKey: nil))

        let deleted = try JSONCoding.decoder().decode(Change.self, from: Data(Self.change(
            seq: 9, entity: "item", op: "delete", id: item.id.description, value: nil, client: nil, key: nil)))
        #expect(deleted.value == nil && deleted.operation == .delete)
    }

    /// The log's rows are written from bytes read in place; the same change from `String`s is
    /// byte for byte the same.
    @Test func aChangeFromBytesIsTheChangeFromStrings() {
        let value = #"{"name":"Tür \"7\""}"#
        let fromStrings = Self.change(seq: 12, entity: "item", op: "upsert", id: "x", value: value, client: "c\n1", key: nil)
        var json = JSONWriter()
        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
        let (entity, op, id, client, valueBytes) = (bytes("item"), bytes("upsert"), bytes("x"), bytes("c\n1"), bytes(value))
        entity.withUnsafeBufferPointer { entity in
            op.withUnsafeBufferPointer { op in
                id.withUnsafeBufferPointer { id in
                    client.withUnsafeBufferPointer { client in
                        valueBytes.withUnsafeBufferPointer { value in
                            ChangeJSON.write(
                                seq: 12, epoch: Array(Self.epoch.utf8), entity: entity, op: op, id: id, value: value,
                                originClientID: client, originIdempotencyKey: nil, at: 1_795_327_200_123, to: &json)
                        }
                    }
                }
            }
        }
        #expect(json.bytes == fromStrings)
    }

    @Test func aFeedBatchDecodesAsChangeBatch() throws {
        let first = Self.change(seq: 1, entity: "item", op: "delete", id: "a", value: nil, client: nil, key: nil)
        let second = Self.change(seq: 2, entity: "item", op: "delete", id: "b", value: nil, client: nil, key: nil)
        var body: [UInt8] = []
        FeedBatchJSON.opening.withUTF8Buffer { body += $0 }
        body += first + [UInt8(ascii: ",")] + second
        body += FeedBatchJSON.closing(cursor: FeedCursor(epoch: Self.epoch, seq: 5), hasMore: true)
        let batch = try JSONCoding.decoder().decode(ChangeBatch.self, from: Data(body))
        #expect(batch.changes.map(\.id) == ["a", "b"])
        #expect(batch.cursor == FeedCursor(epoch: Self.epoch, seq: 5) && batch.hasMore)
    }

    /// The snapshot's items are written from rows read in place, through the same `ItemJSON`.
    @Test func aSnapshotDecodesAsSnapshot() throws {
        var json = JSONWriter()
        SnapshotJSON.writeOpening(to: &json)
        Fixture.keyboard.write(to: &json)
        SnapshotJSON.writeSeparator(to: &json)
        let mouse = Fixture.mouse
        let name = Array(mouse.name.utf8), colorName = Array(mouse.color!.name.utf8), id = Array(mouse.id.description.utf8)
        name.withUnsafeBufferPointer { name in
            colorName.withUnsafeBufferPointer { colorName in
                id.withUnsafeBufferPointer { id in
                    ItemJSON.write(
                        id: id, name: name,
                        color: ColorJSON(name: colorName, red: mouse.color!.red, green: mouse.color!.green, blue: mouse.color!.blue),
                        status: mouse.status, version: Int64(mouse.version), createdAt: Timestamp.milliseconds(mouse.createdAt),
                        updatedAt: Timestamp.milliseconds(mouse.updatedAt), to: &json)
                }
            }
        }
        SnapshotJSON.writeItemsEnd(to: &json)
        Self.navigation.write(to: &json)
        SnapshotJSON.writeClosing(cursor: FeedCursor(epoch: Self.epoch, seq: 9), to: &json)
        let snapshot = try JSONCoding.decoder().decode(Snapshot.self, from: Data(json.bytes))
        #expect(snapshot == Snapshot(items: [Fixture.keyboard, mouse], navigation: [Self.navigation], cursor: FeedCursor(epoch: Self.epoch, seq: 9)))
    }

    @Test func anErrorBodyCarriesItsCodeAndIsShortenedToFit() throws {
        let full = try JSONCoding.decoder().decode(
            ErrorBody.self, from: Data(ErrorJSON.body(code: .conflict, message: "changed", field: nil, current: Fixture.keyboard).utf8))
        #expect(full.error.code == .conflict && full.error.current?.id == Fixture.keyboardID)
        let short = ErrorJSON.body(code: .validationFailed, message: String(repeating: "x", count: 300), field: "name", current: nil, maxBytes: 123)
        #expect(short.utf8.count <= 123 && short.contains("…"))
        #expect(try JSONCoding.decoder().decode(ErrorBody.self, from: Data(short.utf8)).error.field == "name")
    }

    /// The request bodies the SDK sends are the ones the server reads: each encodes and decodes to itself.
    @Test func theRequestBodiesRoundTrip() throws {
        func roundTrip<Body: Codable & Equatable>(_ body: Body) throws -> Body {
            try JSONCoding.decoder().decode(Body.self, from: JSONCoding.encoder().encode(body))
        }
        for body in [NewItemBody(id: Fixture.mouseID, draft: Fixture.typed), NewItemBody(draft: Fixture.other)] {
            #expect(try roundTrip(body) == body)
        }
        #expect(try roundTrip(NewItemsBody(items: [NewItemBody(draft: Fixture.typed)])).items.count == 1)
        #expect(try roundTrip(TokenRequestBody(user: "alice", role: .editor)) == TokenRequestBody(user: "alice", role: .editor))
        #expect(try roundTrip(StatusBody.ok) == StatusBody.ok)
        let command = CommandRequestBody(command: .updateDraft(draft: Fixture.typed))
        #expect(try JSONCoding.decoder().decode(CommandRequestBody.self, from: JSONCoding.encoder().encode(command)) == command)
        // What the SDK writes for a command of an edit is what the server's fast path reads.
        let bytes = try JSONCoding.encoder().encode(command)
        #expect(bytes.withUnsafeBytes { CommandRequestBody(fastJSON: $0) } == command)

        let replacement = try JSONCoding.decoder().decode(
            NavigationReplacementBody.self, from: JSONCoding.encoder().encode(Self.navigation))
        #expect(replacement.state == Self.navigation.state && replacement.clientID == Self.navigation.clientID)
    }

    /// The batch route's answer, written by hand, decodes to the results it was written from.
    @Test func aBatchAnswerDecodesToItsResults() throws {
        let results = BatchResultsJSON(results: [
            .created(Fixture.keyboard),
            .refused(status: 422, ErrorBody.Object(code: .validationFailed, message: "name must be 1-200 characters", field: "name")),
            .refused(status: 409, ErrorBody.Object(code: .conflict, message: "an item with this id exists", field: "id", current: Fixture.mouse)),
        ])
        var json = JSONWriter()
        results.write(to: &json)
        #expect(try JSONCoding.decoder().decode(BatchResultsJSON.self, from: Data(json.bytes)) == results)
        // The same shape as each result's Codable writes it (nulls written, not left out).
        #expect(try JSON.parse(Data(json.bytes)) == JSON.parse(JSONCoding.encoder().encode(["results": results.results])))
    }

    /// The item list's page, written by the server, decodes to the page it was written from.
    @Test func anItemPageDecodesToItself() throws {
        for page in [ItemPageJSON(items: [Fixture.keyboard, Fixture.mouse], next: PageCursor(seq: 42)), ItemPageJSON(items: [], next: nil)] {
            var json = JSONWriter()
            page.write(to: &json)
            #expect(try JSONCoding.decoder().decode(ItemPageJSON.self, from: Data(json.bytes)) == page)
        }
    }
}
