import Foundation
import StockroomCore
import StockroomWire

/// One committed change, as the log keeps it.
public struct ChangeEntry: Sendable, Hashable {
    /// Commit-order position, without gaps.
    public var seq: Int64
    /// What kind of entity changed.
    public var entity: ChangeEntity
    /// Written or deleted.
    public var op: ChangeOp
    /// The item id or clientID.
    public var id: String
    /// The user a navigation change belongs to.
    public var owner: UserID?
    /// The JSON of the Item or Navigation after the change; nil for a delete.
    public var valueJSON: String?
    /// The device that caused it.
    public var originClientID: ClientID?
    /// The Idempotency-Key of the request that caused it.
    public var originIdempotencyKey: String?
    /// When it was committed (milliseconds since 1970).
    public var at: Int64

    /// The contract's `Change` JSON object, encoded once when the entry is read.
    public var json: String

    /// An entry read from a log, its JSON encoded for `epoch`.
    public init(
        seq: Int64, entity: ChangeEntity, op: ChangeOp, id: String, owner: UserID?, valueJSON: String?,
        originClientID: ClientID?, originIdempotencyKey: String?, at: Int64, epoch: String
    ) {
        self.seq = seq
        self.entity = entity
        self.op = op
        self.id = id
        self.owner = owner
        self.valueJSON = valueJSON
        self.originClientID = originClientID
        self.originIdempotencyKey = originIdempotencyKey
        self.at = at
        json = Self.json(
            seq: seq, epoch: epoch, entity: entity, op: op, id: id, valueJSON: valueJSON,
            originClientID: originClientID?.rawValue, originIdempotencyKey: originIdempotencyKey, at: at)
    }

    /// The `Change` JSON of an entry, built from the stored value without re-encoding it.
    public static func json(
        seq: Int64, epoch: String, entity: ChangeEntity, op: ChangeOp, id: String, valueJSON: String?,
        originClientID: String?, originIdempotencyKey: String?, at: Int64
    ) -> String {
        var json = JSONWriter(capacity: 160 + (valueJSON?.utf8.count ?? 4))
        ChangeJSON.write(
            seq: seq, epoch: epoch.utf8, entity: entity.rawValue, op: op.rawValue, id: id, value: valueJSON?.utf8,
            originClientID: originClientID, originIdempotencyKey: originIdempotencyKey, at: at, to: &json)
        return json.string
    }
}
