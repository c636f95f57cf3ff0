import Foundation
import GRDB
import StockroomCore
import StockroomStorage
import StockroomWire

/// Appends change entries inside the write's own transaction.
enum ChangeLog {
    /// The form of the values this store writes into `changes.value`: the API's JSON of the entity
    /// (`Item`, `Navigation` with its checkpoints and url), spliced into feed answers as it is. Recorded in
    /// `meta.change_value_format` (0006, raised by 0007); a file in another form is refused at open
    /// (ARCHITECTURE.md, "The change log's stored form").
    static let valueFormat = "2"

    /// Appends one entry and returns its seq. `before`: an item change's item as it was (nil for
    /// a create and for other entities). The value writes its own JSON (an item, a navigation):
    /// no `Encodable` container, no cast at run time. The entry is also handed to `observer` (the
    /// writer's) as appended, so that the commit publishes it without reading it back: every
    /// append on the writer hands its entry, so none the observer holds can be another's.
    @discardableResult
    static func append(
        _ db: Database,
        entity: ChangeEntity,
        op: ChangeOp,
        id: String,
        owner: UserID?,
        value: (some JSONWritable)?,
        before: Item? = nil,
        origin: Origin,
        at: Int64,
        observer: ChangeObserver
    ) throws -> Int64 {
        let json = value?.jsonBytes
        let previous = before?.jsonBytes
        // A cached statement, not `ChangeRecord.insert` (which prepares anew and encodes through
        // `Encodable`): every write appends at least one entry. In `CodingKeys` order.
        try db.cachedStatement(sql: appendSQL).execute { binder in
            binder.bind(entity)
            binder.bind(op)
            binder.bind(id)
            binder.bind(owner)
            binder.bind(text: json)
            binder.bind(origin.clientID)
            binder.bind(origin.idempotencyKey)
            binder.bind(at)
            binder.bind(text: previous)
        }
        let seq = db.lastInsertedRowID
        observer.appended(
            seq: seq, entity: entity, op: op, id: id, owner: owner, valueJSON: json.map { String(decoding: $0, as: UTF8.self) },
            previous: previous.map { String(decoding: $0, as: UTF8.self) }, origin: origin, at: at)
        return seq
    }

    /// Every column, `seq` one past the head (`headSQL`): the log has no AUTOINCREMENT counter to
    /// keep (migration 0012), and the newest entry or, with every entry trimmed, the seq trimmed
    /// through is the highest seq ever given. SQLite's `coalesce` evaluates its arguments in order
    /// and stops at the first that is not NULL, so a log with entries costs one seek to its last.
    static let appendSQL: String = {
        let columns = ChangeRecord.CodingKeys.allCases.filter { $0 != .seq }.map(\.rawValue)
        return "INSERT INTO changes (seq, \(columns.joined(separator: ", "))) VALUES ((\(headSQL)) + 1, \(columns.map { _ in "?" }.joined(separator: ", ")))"
    }()

    /// The seq of the newest entry ever appended (0 before the first): the newest retained, or the
    /// seq the log is trimmed through when none is (the store trims from the oldest end only).
    static let headSQL =
        "SELECT coalesce((SELECT max(seq) FROM changes), (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'trimmed_through'), 0)"

    static func head(_ db: Database) throws -> Int64 {
        // Cached: every command reads it.
        try Int64.fetchOne(db.cachedStatement(sql: headSQL)) ?? 0
    }
}
