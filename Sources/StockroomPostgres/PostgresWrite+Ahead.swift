import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage

/// What a write will read or write first, known before it runs, which a batch does for several
/// writes at once (`PostgresStore.answeringAhead`).
enum WritePlan: Sendable {
    /// A PUT's item update (`PlannedUpdate`).
    case update(PlannedUpdate)
    /// A POST's item insert (`PlannedInsert`).
    case insert(PlannedInsert)
    /// A command of a device: its row and the items it looks up are read ahead (`PostgresWrite.readAhead`).
    case command(Command, clientID: ClientID)
}

/// The item update a write's body asks for first (`WriteRows.updateLiveItem`), known before it
/// runs: a `PUT /v1/items/{id}` whose draft is valid (with an idempotency key, once the key is
/// claimed with no stored answer: `PostgresWrite.claimAhead`). Several of them
/// in one batch are run by one statement (`Statements.UpdateItemsByID`) before their bodies, which
/// then take their answer from the write (`PostgresWrite.answeredAhead`) instead of a statement
/// each. The body still decides everything: the update it asks for is the one planned, and when it
/// does not ask for it the batch runs again without answers ahead.
struct PlannedUpdate: Sendable {
    var id: ItemID
    var fields: ValidDraft
    /// The versions allowed; nil: any live version.
    var versions: [Int64]?
    var at: Int64

    /// The plan of `WriteRules.updateItem(id:draft:precondition:)`; nil when the draft is invalid
    /// (the body then refuses it without an update).
    init?(id: ItemID, draft: Draft, precondition: VersionPrecondition?) {
        guard let fields = try? ValidDraft(draft) else { return nil }
        self.id = id
        self.fields = fields
        versions = if case .oneOf(let versions)? = precondition { versions.map(Int64.init) } else { nil }
        at = Timestamp.milliseconds(Date())
    }

    /// Whether `updateLiveItem(id, fields:, precondition:)` asks for this update.
    func isAsked(id: ItemID, fields: ValidDraft, versions: [Int64]?) -> Bool {
        self.id == id && self.fields == fields && self.versions == versions
    }

    /// A write of the batch did not ask for the update planned for it, or asked for another.
    struct NotAsked: Error {}
}

/// The item insert a write's body asks for first (`WriteRows.insertItem`), known before it runs: a
/// `POST /v1/items` whose draft is valid (a keyed one as a keyed `PlannedUpdate`), its id chosen before (a fresh
/// random one when the request names none). Several of them in one batch are run by one statement
/// (`Statements.InsertItems`) before their bodies, as `PlannedUpdate`s are.
struct PlannedInsert: Sendable {
    var id: ItemID
    var fields: ValidDraft
    var at: Int64

    init?(id: ItemID, draft: Draft) {
        guard let fields = try? ValidDraft(draft) else { return nil }
        self.id = id
        self.fields = fields
        at = Timestamp.milliseconds(Date())
    }
}

/// An item write run ahead for one write of a batch, kept for its body to take.
enum AnsweredAhead {
    /// The update planned, and the item before and after (nil: not written: missing, deleted or
    /// at another version).
    case update(PlannedUpdate, written: (before: Item, after: Item)?)
    /// The insert planned, and the item inserted (nil: the id exists or existed).
    case insert(PlannedInsert, item: Item?)
}

extension PostgresWrite {
    /// Runs the planned updates of several writes in one statement and keeps each answer for its
    /// write (`answeredAhead`). The items are distinct.
    func updateLiveItems(_ planned: [(write: ObjectIdentifier, update: PlannedUpdate)]) async throws {
        var written: [Int: (before: Item, after: Item)] = [:]
        for row in try await rows(Statements.UpdateItemsByID(updates: planned.map(\.update))) {
            written[row.position] = (try row.before.item, try row.after.item)
        }
        for (index, plan) in planned.enumerated() {
            answeredAhead[plan.write] = .update(plan.update, written: written[index + 1])
        }
    }

    /// Runs the planned inserts of several writes in one statement and keeps each answer for its
    /// write (`answeredAhead`). The ids are distinct.
    func insertItems(_ planned: [(write: ObjectIdentifier, insert: PlannedInsert)]) async throws {
        var inserted: [ItemID: Item] = [:]
        for row in try await rows(Statements.InsertItems(inserts: planned.map(\.insert))) {
            let item = try row.item
            inserted[item.id] = item
        }
        for plan in planned {
            answeredAhead[plan.write] = .insert(plan.insert, item: inserted[plan.insert.id])
        }
    }

    /// The answer kept for the running write's insert of `id` with `fields`, taken: nil when none
    /// was kept (the insert is then the write's to run), `.some(item)` else; `PlannedUpdate.NotAsked`
    /// when the write asks for another write than the one run for it.
    func takeInsertedItem(_ id: ItemID, fields: ValidDraft) throws -> Item?? {
        guard let answer = takeAnswer() else { return nil }
        guard case .insert(let insert, let item) = answer, insert.id == id, insert.fields == fields else { throw PlannedUpdate.NotAsked() }
        return .some(item)
    }

    /// The answer kept for the running write's update, taken, as `takeInsertedItem`.
    func takeAnsweredUpdate(_ id: ItemID, fields: ValidDraft, versions: [Int64]?) throws -> (before: Item, after: Item)?? {
        guard let answer = takeAnswer() else { return nil }
        guard case .update(let update, let written) = answer, update.isAsked(id: id, fields: fields, versions: versions) else {
            throw PlannedUpdate.NotAsked()
        }
        return .some(written)
    }

    private func takeAnswer() -> AnsweredAhead? {
        guard let running else { return nil }
        return answeredAhead.removeValue(forKey: running)
    }
}

extension PostgresWrite {
    /// Reads ahead what several commands of different devices will read first: the devices' rows
    /// in one statement (not locked), then the items the commands look up in their states, locked
    /// in id order, in another. Each answers the write's `client` and `liveItem` until this
    /// transaction writes that row (`saveClient`, `updateItem`, `tombstone`, the sweep forget it),
    /// so a write never sees a row as it was before an earlier write of its batch changed it.
    func readAhead(_ commands: [(command: Command, clientID: ClientID)]) async throws {
        for row in try await rows(Statements.ClientsByID(clientIDs: commands.map(\.clientID))) {
            clientsAhead[row.clientID] = StoredClient(navigation: try row.navigation, owner: row.owner)
        }
        var ids = Set<ItemID>()
        for (command, clientID) in commands where command.readsItems {
            let state = clientsAhead[clientID]?.navigation.state ?? Navigation.unwritten(clientID: clientID).state
            ids.formUnion(command.itemsToLookUp(in: state))
        }
        guard !ids.isEmpty else { return }
        for row in try await rows(Statements.LockedItems(ids: Array(ids))) {
            let stored = StoredItem(item: try row.item, row: row)
            itemsAhead[stored.item.id] = stored
        }
    }
}

/// An item update of a command of the batch, not sent yet (`PostgresWrite.flushItemUpdates`):
/// the row as the update makes it, and the version it was read at.
struct DeferredItemUpdate {
    var row: ItemRow
    var fields: ValidDraft
    var base: Int64
}

/// A device row written by a command of the batch and not sent yet (`PostgresWrite.flushSaves`).
struct DeferredSave {
    var clientID: ClientID
    var owner: UserID
    var stateJSON: String
    var version: Int64
    /// The version the row had when read ahead: written only if it still has it.
    var base: Int64
    var updatedAt: Int64
    var referenced: [String]
}

extension PostgresWrite {
    /// Keeps a command's navigation (its state's JSON `stateJSON`) to write with the batch's others
    /// (a later save of the same device replaces it, keeping the version first read).
    func deferSave(_ navigation: Navigation, stateJSON: [UInt8], owner: UserID) {
        var save = DeferredSave(
            clientID: navigation.clientID, owner: owner, stateJSON: String(decoding: stateJSON, as: UTF8.self),
            version: Int64(navigation.version), base: Int64(navigation.version - 1),
            updatedAt: navigation.updatedAt.map(Timestamp.milliseconds) ?? 0,
            referenced: navigation.state.repairableItemIDs.map(\.description))
        if let index = deferredSaves.firstIndex(where: { $0.clientID == navigation.clientID }) {
            save.base = deferredSaves[index].base
            deferredSaves[index] = save
        } else {
            deferredSaves.append(save)
        }
    }

    /// Keeps an item update of a row locked ahead to write with the batch's others (a later update
    /// of the same row replaces it, keeping the version first read).
    func deferItemUpdate(_ row: ItemRow, fields: ValidDraft, base: Int64) {
        if let index = deferredItemUpdates.firstIndex(where: { $0.row.seq == row.seq }) {
            deferredItemUpdates[index].row = row
            deferredItemUpdates[index].fields = fields
        } else {
            deferredItemUpdates.append(DeferredItemUpdate(row: row, fields: fields, base: base))
        }
    }

    /// Writes the deferred item updates in one statement (`Statements.UpdateItemsBySeq`). Their
    /// rows are locked by this transaction, so each is at the version read.
    func flushItemUpdates() async throws {
        guard !deferredItemUpdates.isEmpty else { return }
        let updates = deferredItemUpdates
        deferredItemUpdates = []
        let written = try await rows(Statements.UpdateItemsBySeq(updates: updates)).first ?? 0
        if written != updates.count {
            throw PostgresStoreError.schema("\(updates.count - written) of \(updates.count) locked items were not at the version read")
        }
    }

    /// Writes the deferred item updates, then the deferred device rows in one statement
    /// (`Statements.SaveClients`); `WriteRetry` when one of them moved since it was read (the
    /// batch then runs again with savepoints).
    func flushSaves() async throws {
        try await flushItemUpdates()
        guard !deferredSaves.isEmpty else { return }
        let saves = deferredSaves
        deferredSaves = []
        let saved = try await rows(Statements.SaveClients(saves: saves)).first ?? 0
        if saved != saves.count { throw WriteRetry() }
    }
}
