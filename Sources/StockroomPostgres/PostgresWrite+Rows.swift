import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage
import StockroomWire

/// PostgreSQL's `WriteRows`: the rules' steps as statements of the write's transaction. Rows a
/// write will change are locked (`FOR UPDATE`) when read, and the locks are taken in one order
/// (`WriteRows`): the client's advisory lock, the items in id order, client rows in client_id
/// order, `log_head` last (`appendLog`). A deadlock PostgreSQL still detects, or a state that moved
/// under the write (`WriteRetry`), runs the write again (`PostgresStore.write`).
extension PostgresWrite: WriteRows {
    // MARK: Items

    func liveItem(_ id: ItemID) async throws -> StoredItem<ItemRow>? {
        if let stored = itemsAhead[id] { return stored }
        guard let row = try await rows(Statements.LockedItem(id: id)).first else { return nil }
        return StoredItem(item: try row.item, row: row)
    }

    func itemExists(_ id: ItemID) async throws -> Bool {
        try await query("SELECT 1 FROM items WHERE id = \(id.description)").isEmpty == false
    }

    /// A transaction inserting the same id that has not committed yet makes this one wait for its outcome.
    func insertItem(_ id: ItemID, fields: ValidDraft, at: Int64) async throws -> Item? {
        if let item = try takeInsertedItem(id, fields: fields) { return item }
        return try await rows(Statements.InsertItem(id: id, fields: fields, now: at)).first?.item
    }

    /// An item this transaction read and locked ahead (`readAhead`), outside a savepoint, is
    /// written with the batch's others in one statement (`flushItemUpdates`) before the next
    /// statement that may read it: the row it becomes is known here, as the update would make it.
    func updateItem(_ stored: StoredItem<ItemRow>, fields: ValidDraft, at: Int64) async throws -> Item {
        let now = max(at, stored.row.updatedAt)
        if savepointDepth == 0, let ahead = itemsAhead[stored.item.id], ahead.row.seq == stored.row.seq {
            var row = stored.row
            row.apply(fields)
            row.version += 1
            row.updatedAt = now
            let item = try row.item
            deferItemUpdate(row, fields: fields, base: stored.row.version)
            itemsAhead[stored.item.id] = StoredItem(item: item, row: row)
            return item
        }
        try await flushItemUpdates()
        itemsAhead[stored.item.id] = nil
        guard let updated = try await rows(Statements.UpdateItem(seq: stored.row.seq, fields: fields, now: now)).first else {
            throw PostgresStoreError.schema("UPDATE items returned no row")
        }
        return try updated.item
    }

    /// One statement checks that the item is live and at an allowed version, locks and writes it.
    func updateLiveItem(_ id: ItemID, fields: ValidDraft, precondition: VersionPrecondition?, at: Int64) async throws
        -> (before: Item, after: Item)?
    {
        let versions: [Int64]? = if case .oneOf(let versions)? = precondition { versions.map(Int64.init) } else { nil }
        if let written = try takeAnsweredUpdate(id, fields: fields, versions: versions) { return written }
        itemsAhead[id] = nil
        guard let written = try await rows(Statements.UpdateItemByID(id: id, fields: fields, now: at, versions: versions)).first else {
            return nil
        }
        return (try written.before.item, try written.after.item)
    }

    func tombstone(_ stored: StoredItem<ItemRow>, at: Int64) async throws {
        itemsAhead[stored.item.id] = nil
        try await query("UPDATE items SET deleted_at = \(at) WHERE seq = \(stored.row.seq)")
    }

    // MARK: Navigation

    /// The client's advisory lock: a device's first writes queue there.
    func queueWrites(of clientID: ClientID) async throws {
        try await lock("client:" + clientID.rawValue)
    }

    /// Takes the advisory lock named `name` until this transaction ends.
    func lock(_ name: String) async throws {
        _ = try await rows(Statements.AdvisoryLock(name: name))
    }

    /// A row read ahead (`readAhead`) answers without holding it: `saveClient` writes only at the
    /// version read, so a change that slipped in runs the write again.
    func client(_ clientID: ClientID, hold: Bool) async throws -> StoredClient? {
        if let stored = clientsAhead[clientID] { return stored }
        let row =
            hold
            ? try await rows(Statements.LockedClient(clientID: clientID)).first
            : try await rows(Statements.ClientByID(clientID: clientID)).first
        return try row.map { StoredClient(navigation: try $0.navigation, owner: $0.owner) }
    }

    func clientsReferencing(_ id: ItemID) async throws -> [ClientID] {
        try await query("SELECT client_id FROM client_item_refs WHERE item_id = \(id.description) ORDER BY client_id")
            .map { ClientID(stored: try $0.decode(String.self)) }
    }

    /// The owner's advisory lock makes the count and the insert one step across daemons.
    func clientCount(owner: UserID) async throws -> Int {
        try await query("SELECT pg_advisory_xact_lock(hashtextextended(\("owner:" + owner.rawValue), 0))")
        return Int(try await query("SELECT count(*) FROM clients WHERE owner = \(owner.rawValue)").first?.decode(Int64.self) ?? 0)
    }

    /// The owner's own change moves `owner_change_seq` to its entry's seq when the entries are
    /// numbered (`append`'s `ownerClient`); a repair by someone else keeps it.
    /// One statement writes the row at the version read (or creates it), or nothing: then `WriteRetry`.
    /// A row read ahead (`readAhead`), outside a savepoint, is written when the batch next sends a
    /// statement (`flushSaves`): checked here against the version read, and again there.
    func saveClient(_ navigation: Navigation, stateJSON: [UInt8], owner: UserID, ownerChanged: Bool) async throws {
        if savepointDepth == 0, let stored = clientsAhead[navigation.clientID] {
            guard stored.navigation.version == navigation.version - 1 else { throw WriteRetry() }
            deferSave(navigation, stateJSON: stateJSON, owner: owner)
            clientsAhead[navigation.clientID] = StoredClient(navigation: navigation, owner: owner)
            return
        }
        clientsAhead[navigation.clientID] = nil
        let saved = try await rows(
            Statements.SaveClient(
                clientID: navigation.clientID, owner: owner, stateJSON: String(decoding: stateJSON, as: UTF8.self),
                version: Int64(navigation.version), now: navigation.updatedAt.map(Timestamp.milliseconds) ?? 0,
                referenced: navigation.state.repairableItemIDs.map(\.description))
        ).first
        if saved != 1 { throw WriteRetry() }
    }

    // MARK: The log

    func append(
        entity: ChangeEntity, op: ChangeOp, id: String, owner: UserID?, value: (some JSONWritable)?, before: Item?, origin: Origin,
        at: Int64, ownerClient: ClientID?
    ) async throws {
        record(entity: entity, op: op, id: id, owner: owner, value: value, before: before, origin: origin, at: at, ownerClient: ownerClient)
        try await appendEarly()
    }

    // MARK: Idempotency

    /// `pg_try_advisory_xact_lock` of the key (`Statements.ClaimKeys`, which `claimAhead` runs for
    /// several): taken by a request still running, on this daemon or another, it is false. The
    /// lock is the session's, so a second request with the key in the same batch would take it
    /// again: the batch's own keys are refused here.
    func claim(_ key: IdempotencyKey) async throws -> Bool {
        guard claimedKeys.insert(key).inserted else { return false }
        if let claimed = claimsAhead.removeValue(forKey: key) { return claimed }
        try await flushSaves()
        return try await rows(Statements.ClaimKeys(names: [Self.lockName(key)])).first?.claimed ?? false
    }

    /// The key's stored answer: `claimAhead`'s when it read it, else by the same statement for one key.
    func storedResponse(_ key: IdempotencyKey) async throws -> (fingerprint: String, response: StoredResponse)? {
        if let ahead = recordsAhead.removeValue(forKey: key) { return ahead }
        try await flushSaves()
        return try await rows(Statements.RecordsByKey(keys: [key])).first.map { ($0.fingerprint, $0.response) }
    }

    /// Kept with the batch's others, inserted in one statement once its entries are numbered
    /// (`flushRecords`), in the same transaction. The key is claimed: no other request can store it.
    func recordResponse(_ key: IdempotencyKey, fingerprint: String, response: StoredResponse, at: Int64) async throws {
        pendingRecords.append(PendingRecord(key: key, fingerprint: fingerprint, response: response, at: at))
    }

    /// Inserts the stored answers kept by `recordResponse` (`Statements.InsertRecords`).
    func flushRecords() async throws {
        guard !pendingRecords.isEmpty else { return }
        let records = pendingRecords
        pendingRecords = []
        _ = try await rows(Statements.InsertRecords(records: records))
    }

    /// The body's entries are discarded with its rows when it is rolled back. The SAVEPOINT is
    /// sent with the body's first statement (`openSavepoint`): a body whose reads and writes were
    /// all answered ahead (a keyed PUT of a batch) sends none, and has nothing to roll back.
    func savepoint<T>(_ body: () async throws -> T) async throws -> T {
        try await flushSaves()
        savepointDepth += 1
        let mark = self.mark
        savepointPending = true
        defer {
            savepointDepth -= 1
            savepointPending = false
        }
        // Still pending after the body: it sent no statement, so there is nothing to release or roll back.
        do {
            let value = try await body()
            if !savepointPending { try await query("RELEASE SAVEPOINT request") }
            return value
        } catch where WriteRules.isDecided(error) {
            if !savepointPending {
                try await query("ROLLBACK TO SAVEPOINT request")
                try await query("RELEASE SAVEPOINT request")
            }
            discard(from: mark)
            throw error
        }
    }

    /// Sends the SAVEPOINT of `savepoint` before the body's first statement.
    func openSavepoint() async throws {
        guard savepointPending else { return }
        savepointPending = false
        try await connection.query("SAVEPOINT request", logger: logger)
    }

    /// Claims the keys of several keyed writes of a batch in one statement, then reads the stored
    /// answers of the keys it took in another: after the locks, so that a request that held one
    /// has committed its answer by then (each statement reads what was committed before it began).
    /// `claim` and `storedResponse` answer from them. A key that comes twice is claimed for its
    /// first write only (the second's `claim` is false, as without this). Returns the writes that
    /// took their key and have no stored answer: those whose item write may run ahead.
    func claimAhead(_ writes: [any PostgresQueuedWrite]) async throws -> Set<ObjectIdentifier> {
        var keys: [IdempotencyKey] = []
        var firstWrite: [IdempotencyKey: ObjectIdentifier] = [:]
        for write in writes {
            guard let key = write.idempotencyKey, firstWrite[key] == nil else { continue }
            firstWrite[key] = ObjectIdentifier(write)
            keys.append(key)
        }
        var taken: [IdempotencyKey] = []
        for row in try await rows(Statements.ClaimKeys(names: keys.map(Self.lockName))) {
            let key = keys[row.position - 1]
            claimsAhead[key] = row.claimed
            if row.claimed { taken.append(key) }
        }
        guard !taken.isEmpty else { return [] }
        for key in taken { recordsAhead.updateValue(nil, forKey: key) }
        for row in try await rows(Statements.RecordsByKey(keys: taken)) {
            recordsAhead[taken[row.position - 1]] = (row.fingerprint, row.response)
        }
        return Set(taken.compactMap { key in recordsAhead[key]! == nil ? firstWrite[key] : nil })
    }

    /// The advisory lock of a key: its user, scope and key, which `hashtextextended` turns into the
    /// lock's 64-bit number (a collision only makes a request wait for an unrelated one, or answer
    /// `requestInProgress` to it).
    static func lockName(_ key: IdempotencyKey) -> String {
        "idempotency:\(key.user.rawValue)\n\(key.scope.rawValue)\n\(key.key)"
    }
}
