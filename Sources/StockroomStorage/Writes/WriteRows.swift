import StockroomCore
import StockroomWire

/// What a backend gives the rules of a write (`WriteRules`): rows read and written inside the
/// write's one transaction, change entries appended to it, savepoints, idempotency records. Each
/// primitive is one step of the storage and decides nothing the contract states: which write is
/// refused, and why, in what order, is `WriteRules`'. `SQLiteWriteRows` (StockroomStore) and `PostgresWrite`
/// (StockroomPostgres) implement it; a new backend implements these and gets every write.
///
/// Locking is the backend's: a primitive that reads a row the write will change holds it, on a
/// backend that locks rows, until the transaction ends. The rules read in one order that such a
/// backend can keep deadlock-free: a device's own queue (`queueWrites(of:)`, for its first write),
/// the items in id order, client rows in client_id order, and the log's head last.
///
/// The methods are `async` for backends whose steps wait on a server; SQLite's never suspend
/// (its writer runs the rules to their end on its own thread).
public protocol WriteRows: AnyObject {
    /// A live item's row as the backend keeps it (the rules hand it back to write it).
    associatedtype ItemRow

    // MARK: Items

    /// The live item `id`, held until the transaction ends; nil when there is none (or it was deleted).
    func liveItem(_ id: ItemID) async throws -> StoredItem<ItemRow>?
    /// Whether an item `id` exists or ever existed (ids are never reused).
    func itemExists(_ id: ItemID) async throws -> Bool
    /// Inserts item `id` at version 1, created and updated `at` (Unix milliseconds); nil, writing
    /// nothing, when the id exists or existed.
    func insertItem(_ id: ItemID, fields: ValidDraft, at: Int64) async throws -> Item?
    /// Writes `fields` to the item read as `stored`, its version one higher, updated at `at` or
    /// its last update, whichever is later.
    func updateItem(_ stored: StoredItem<ItemRow>, fields: ValidDraft, at: Int64) async throws -> Item
    /// `updateItem` in one step when `id` is live and its version passes `precondition`, with the
    /// item as it was; nil, writing nothing, otherwise (the rules then read the row to say why).
    func updateLiveItem(_ id: ItemID, fields: ValidDraft, precondition: VersionPrecondition?, at: Int64) async throws
        -> (before: Item, after: Item)?
    /// Marks the item deleted at `at`.
    func tombstone(_ stored: StoredItem<ItemRow>, at: Int64) async throws

    // MARK: Navigation

    /// Queues this write behind every other write of `clientID`'s navigation that queued, until
    /// the transaction ends: the rules queue a device's first write (it has no row to hold yet).
    func queueWrites(of clientID: ClientID) async throws
    /// The navigation row of `clientID`. `hold`: held until the transaction ends; otherwise read
    /// as it is now (`saveClient` then writes only at the version read).
    func client(_ clientID: ClientID, hold: Bool) async throws -> StoredClient?
    /// The devices whose navigation a delete of item `id` would change (`repairableItemIDs`), in
    /// client_id order; a backend may list others too, whose repair then changes nothing.
    func clientsReferencing(_ id: ItemID) async throws -> [ClientID]
    /// How many devices `owner` has, counted so that two writes adding a device cannot both pass
    /// the cap (the backend serializes them).
    func clientCount(owner: UserID) async throws -> Int
    /// Writes a navigation row: `navigation` (its state, version and time) owned by `owner`, with
    /// its item references (`repairableItemIDs`) and `stateJSON` (the state's `jsonBytes`) as its
    /// stored state, only if the stored row is still at `navigation.version - 1` (none for
    /// version 1): `WriteRetry` otherwise (a write read the row without holding it, and another
    /// changed it meanwhile; the write then runs again). `ownerChanged`: the owner made this change
    /// (its entry, appended just before, orders the owner's devices), not a repair by someone else.
    func saveClient(_ navigation: Navigation, stateJSON: [UInt8], owner: UserID, ownerChanged: Bool) async throws

    // MARK: The log

    /// Appends one change entry to this transaction's log. `before`: for an item change, the item
    /// as it was (nil for a create). `ownerClient`: a device whose owner's order moves to this
    /// entry (see `saveClient`).
    func append(
        entity: ChangeEntity, op: ChangeOp, id: String, owner: UserID?, value: (some JSONWritable)?, before: Item?, origin: Origin,
        at: Int64, ownerClient: ClientID?
    ) async throws

    // MARK: Idempotency

    /// Claims an idempotency key for the transaction: false when a request with it runs elsewhere.
    func claim(_ key: IdempotencyKey) async throws -> Bool
    /// The stored answer of a decided request with `key`, and its fingerprint.
    func storedResponse(_ key: IdempotencyKey) async throws -> (fingerprint: String, response: StoredResponse)?
    /// Stores a decided request's answer.
    func recordResponse(_ key: IdempotencyKey, fingerprint: String, response: StoredResponse, at: Int64) async throws
    /// Runs `body` in a savepoint: when it throws a decided refusal (`WriteRules.isDecided`), what
    /// it wrote (rows and entries) is rolled back and the error rethrown; any other error fails the
    /// whole transaction.
    func savepoint<T>(_ body: () async throws -> T) async throws -> T
}

/// A live item as a write read it: the domain's value and the backend's row.
public struct StoredItem<Row> {
    public var item: Item
    public var row: Row

    public init(item: Item, row: Row) {
        self.item = item
        self.row = row
    }
}

/// A navigation row: the device's navigation and its owner.
public struct StoredClient: Sendable {
    public var navigation: Navigation
    public var owner: UserID

    public init(navigation: Navigation, owner: UserID) {
        self.navigation = navigation
        self.owner = owner
    }
}

/// Where an idempotent write stands after its first part (`WriteRules.idempotent`).
public enum IdempotentStep<Value: Sendable>: Sendable {
    /// A decided request's stored answer: nothing was applied.
    case replayed(StoredResponse)
    /// The request's refusal, rolled back and stored (when rendered).
    case refused(any Error)
    /// The request's value, applied; its answer is stored by `WriteRules.recordSuccess`.
    case succeeded(Value)
}

extension CommandOutcome {
    /// The outcome at the log's head after its write (`seq`), which the backend knows once the
    /// write's entries are numbered: at once on SQLite, at the end of a batch on PostgreSQL.
    public func positioned(at head: Int64) -> CommandOutcome {
        var outcome = self
        outcome.seq = head
        return outcome
    }
}

/// The write met a state another transaction changed under it, or a fresh random id that exists:
/// the backend runs it again from the start.
public struct WriteRetry: Error, Sendable {
    public init() {}
}
