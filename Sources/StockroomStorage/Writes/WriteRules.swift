import Foundation
import StockroomCore
import StockroomWire  // needed: Item's and Navigation's JSONWritable conformances, for the values of change entries

/// The rules of every item and navigation write, once for every backend, over its `WriteRows`:
/// what each write reads, the checks and refusals in the contract's order with their texts,
/// `Transition.decide`, the item effect, the repair of other devices after a delete, the device
/// cap, the change entries and the outcome. A backend runs one of these inside its transaction.
public enum WriteRules {
    // MARK: Items

    /// Creates an item (version 1): `alreadyExists` for an id that exists or existed, before a
    /// draft's validation failure.
    @inlinable
    public static func createItem<Rows: WriteRows>(_ rows: Rows, id: ItemID?, draft: Draft, origin: Origin) async throws -> Item {
        let id = id ?? .random()
        let fields: ValidDraft
        do {
            fields = try validated(draft)
        } catch {
            if try await rows.itemExists(id) { throw StoreError.alreadyExists(id) }
            throw error
        }
        guard let item = try await rows.insertItem(id, fields: fields, at: Timestamp.milliseconds(Date())) else {
            throw StoreError.alreadyExists(id)
        }
        try await logUpsert(rows, item, before: nil, origin: origin)
        return item
    }

    /// Creates each item of a batch on its own: a refused one (exists, invalid) is answered alone,
    /// having written nothing, and the others are created; any other failure fails the batch.
    @inlinable
    public static func createItems<Rows: WriteRows>(_ rows: Rows, _ items: [BatchItem], origin: Origin) async throws -> [ItemCreation] {
        var outcomes: [ItemCreation] = []
        outcomes.reserveCapacity(items.count)
        for entry in items {
            // No savepoint per item: `createItem` refuses before it writes anything.
            do {
                outcomes.append(.created(try await createItem(rows, id: entry.id, draft: entry.draft, origin: origin)))
            } catch let error as StoreError {
                if case .unavailable = error { throw error }
                outcomes.append(.refused(error))
            }
        }
        return outcomes
    }

    /// Replaces a live item's editable fields, its version one higher. Refusals in the contract's
    /// order: `notFound`, then `preconditionFailed`, then the draft's validation failure.
    @inlinable
    public static func updateItem<Rows: WriteRows>(
        _ rows: Rows, id: ItemID, draft: Draft, precondition: VersionPrecondition?, origin: Origin
    ) async throws -> Item {
        let fields = Result { try validated(draft) }
        let now = Timestamp.milliseconds(Date())
        // One step when it is written; the row is read only to say why it was not.
        if case .success(let fields) = fields,
            let written = try await rows.updateLiveItem(id, fields: fields, precondition: precondition, at: now)
        {
            try await logUpsert(rows, written.after, before: written.before, origin: origin)
            return written.after
        }
        return try await updateItemRead(rows, id: id, fields: fields, precondition: precondition, at: now, origin: origin)
    }

    /// `updateItem` when its one step wrote nothing: the row read, to refuse in the contract's
    /// order, or to write it. Apart, so that `updateItem`'s frame, which every PUT allocates, does
    /// not hold this path's values.
    @inlinable
    @inline(never)
    static func updateItemRead<Rows: WriteRows>(
        _ rows: Rows, id: ItemID, fields: Result<ValidDraft, any Error>, precondition: VersionPrecondition?, at now: Int64,
        origin: Origin
    ) async throws -> Item {
        guard let stored = try await rows.liveItem(id) else { throw StoreError.notFound("no item \(id)") }
        if let precondition, !precondition.matches(stored.item.version) {
            throw StoreError.preconditionFailed(currentVersion: stored.item.version)
        }
        let item = try await rows.updateItem(stored, fields: try fields.get(), at: now)
        try await logUpsert(rows, item, before: stored.item, origin: origin)
        return item
    }

    /// Deletes a live item and repairs every navigation that showed it: `notFound`, then `preconditionFailed`.
    @inlinable
    public static func deleteItem<Rows: WriteRows>(_ rows: Rows, id: ItemID, precondition: VersionPrecondition?, origin: Origin) async throws {
        guard let stored = try await rows.liveItem(id) else { throw StoreError.notFound("no item \(id)") }
        if let precondition, !precondition.matches(stored.item.version) {
            throw StoreError.preconditionFailed(currentVersion: stored.item.version)
        }
        try await tombstone(rows, stored, origin: origin, exceptClient: nil)
    }

    /// Inserts the demo items (the caller has checked that the store holds none).
    public static func insertDemoItems<Rows: WriteRows>(_ rows: Rows) async throws {
        let origin = Origin(user: UserID(stored: "demo"))
        for draft in DemoItems.drafts {
            guard let item = try await rows.insertItem(.random(), fields: try validated(draft), at: Timestamp.milliseconds(Date())) else {
                throw WriteRetry()
            }
            try await logUpsert(rows, item, before: nil, origin: origin)
        }
    }

    // MARK: Navigation

    /// Replaces a device's whole navigation (a deep link, a restore): refusals in order: another
    /// user's device (`notFound`), the state's size, `preconditionFailed`, an item it names that
    /// does not exist (the first in id order), the device cap. A state equal to the stored one
    /// writes nothing.
    @inlinable
    public static func replaceNavigation<Rows: WriteRows>(
        _ rows: Rows, clientID: ClientID, state: NavigationState, precondition: VersionPrecondition?, origin: Origin, limits: StoreLimits
    ) async throws -> Navigation {
        let current = try await currentNavigation(rows, clientID, hold: true, user: origin.user)
        do throws(DomainError) {
            try state.checkSize()
        } catch {
            throw StoreError.domain(error)
        }
        if let precondition, !precondition.matches(current.version) {
            throw StoreError.preconditionFailed(currentVersion: current.version)
        }
        // Held, so that a delete of one of them waits for this write and then repairs it.
        var items: [ItemID: Item] = [:]
        for id in inIDOrder(state.referencedItemIDs) {
            guard let stored = try await rows.liveItem(id) else {
                let field = state.path.contains(.item(id: id)) ? "path" : "destination"
                throw StoreError.domain(.validationFailed(field: field, message: "no item \(id)"))
            }
            items[id] = stored.item
        }
        let state = state.rendered(items: items)
        if current.version > 0, current.state == state { return current }
        try await checkNewClient(rows, previous: current, owner: origin.user, limits: limits)
        return try await saveNavigation(rows, clientID: clientID, owner: origin.user, state: state, previous: current, origin: origin).navigation
    }

    /// Applies one command to a device's navigation: the items it needs read, `Transition.decide`,
    /// the item effect (with the repair of other devices after a delete), the device cap for a new
    /// device, the navigation written, and the outcome (its `seq` set by the backend:
    /// `CommandOutcome.positioned`).
    /// Its steps are functions of their own, each awaited in turn: an async function's frame holds
    /// every value any of its paths keeps across a suspension, and a task allocates it whole.
    @inlinable
    public static func runCommand<Rows: WriteRows>(
        _ rows: Rows, _ command: Command, clientID: ClientID, origin: Origin, limits: StoreLimits
    ) async throws -> CommandOutcome {
        let read = try await commandReads(rows, command, clientID: clientID, user: origin.user)
        let transition = try decide(command, read)
        let written = try await applyEffect(rows, transition.effect, stored: read.stored, clientID: clientID, origin: origin)
        return try await commandOutcome(
            rows, state: transition.state, current: read.current, written: written, clientID: clientID, origin: origin, limits: limits)
    }

    /// What a command reads before it is decided: the device's navigation, the items the command
    /// needs, and a restore's source navigation.
    @usableFromInline
    struct CommandReads<ItemRow> {
        @usableFromInline var current: Navigation
        @usableFromInline var stored: [ItemID: StoredItem<ItemRow>]
        @usableFromInline var restoreSource: NavigationState?

        @inlinable
        init(current: Navigation, stored: [ItemID: StoredItem<ItemRow>], restoreSource: NavigationState?) {
            self.current = current
            self.stored = stored
            self.restoreSource = restoreSource
        }
    }

    @inlinable
    @inline(never)
    static func commandReads<Rows: WriteRows>(
        _ rows: Rows, _ command: Command, clientID: ClientID, user: UserID
    ) async throws -> CommandReads<Rows.ItemRow> {
        let current: Navigation
        var stored: [ItemID: StoredItem<Rows.ItemRow>] = [:]
        if command.readsItems {
            // Read first to learn which items the command needs, without holding the row (items
            // are held before clients); the navigation is then written only if the row is still at
            // this version (`saveClient`), so a repair that slipped in between runs the command again.
            current = try await currentNavigation(rows, clientID, hold: false, user: user)
            for id in inIDOrder(command.itemsToLookUp(in: current.state)) {
                stored[id] = try await rows.liveItem(id)
            }
        } else {
            current = try await currentNavigation(rows, clientID, hold: true, user: user)
        }
        var restoreSource: NavigationState?
        if case .restore(let sourceID) = command, let source = try await rows.client(sourceID, hold: false), source.owner == user {
            restoreSource = source.navigation.state
        }
        return CommandReads(current: current, stored: stored, restoreSource: restoreSource)
    }

    @inlinable
    @inline(never)
    static func decide<ItemRow>(_ command: Command, _ read: CommandReads<ItemRow>) throws -> Transition {
        do throws(DomainError) {
            return try Transition.decide(
                command, on: read.current.state, items: read.stored.mapValues(\.item), restoreSource: read.restoreSource)
        } catch {
            throw StoreError.domain(error)
        }
    }

    /// The command's item effect: the item written and its entry's JSON (nil for none or a delete).
    @inlinable
    @inline(never)
    static func applyEffect<Rows: WriteRows>(
        _ rows: Rows, _ effect: ItemEffect, stored: [ItemID: StoredItem<Rows.ItemRow>], clientID: ClientID, origin: Origin
    ) async throws -> (item: Item, json: WrittenJSON)? {
        switch effect {
        case .none:
            return nil
        case .insert(let fields):
            // A fresh random id that exists already: the write runs again with another.
            guard let item = try await rows.insertItem(.random(), fields: fields, at: Timestamp.milliseconds(Date())) else {
                throw WriteRetry()
            }
            return (item, try await logUpsert(rows, item, before: nil, origin: origin))
        case .update(let id, let fields, let expectedVersion):
            guard let item = stored[id], item.item.version == expectedVersion else {
                throw StoreError.domain(.invalidTransition("item \(id) changed during the command"))
            }
            let updated = try await rows.updateItem(item, fields: fields, at: Timestamp.milliseconds(Date()))
            return (updated, try await logUpsert(rows, updated, before: item.item, origin: origin))
        case .delete(let id):
            guard let item = stored[id] else { throw StoreError.domain(.itemDeleted(id)) }
            try await tombstone(rows, item, origin: origin, exceptClient: clientID)
            return nil
        }
    }

    /// The navigation written when the command changed it (a new device counted against its
    /// owner's cap first), and the command's outcome.
    @inlinable
    @inline(never)
    static func commandOutcome<Rows: WriteRows>(
        _ rows: Rows, state: NavigationState, current: Navigation, written: (item: Item, json: WrittenJSON)?, clientID: ClientID,
        origin: Origin, limits: StoreLimits
    ) async throws -> CommandOutcome {
        guard state != current.state else {
            return CommandOutcome(navigation: current, item: written?.item, seq: 0, navigationJSON: nil, itemJSON: written?.json)
        }
        try await checkNewClient(rows, previous: current, owner: origin.user, limits: limits)
        let (navigation, navigationJSON) = try await saveNavigation(
            rows, clientID: clientID, owner: origin.user, state: state, previous: current, origin: origin)
        // The log's head after this write: the backend positions it once its entries are numbered.
        return CommandOutcome(navigation: navigation, item: written?.item, seq: 0, navigationJSON: navigationJSON, itemJSON: written?.json)
    }

    // MARK: Idempotency

    /// Runs `body` once per idempotency key: a key claimed by a request still running is
    /// `requestInProgress`; a decided request's stored answer is replayed (another body under the
    /// same key is `idempotencyKeyReused`); a first run's refusal is rolled back and, rendered by
    /// `idempotency`, stored now; a first run's value is stored by `recordSuccess` once the backend
    /// has positioned it (`CommandOutcome.positioned`), in the same transaction. A failure of storage fails the
    /// transaction and stores nothing.
    @inlinable
    public static func idempotent<Rows: WriteRows, Value: Sendable>(
        _ rows: Rows, _ idempotency: IdempotentRequest<Value>, _ body: () async throws -> Value
    ) async throws -> IdempotentStep<Value> {
        let key = idempotency.key
        guard try await rows.claim(key) else { throw StoreError.requestInProgress }
        if let stored = try await rows.storedResponse(key) {
            guard idempotency.matches(stored.fingerprint) else { throw StoreError.idempotencyKeyReused }
            return .replayed(stored.response)
        }
        do {
            return .succeeded(try await rows.savepoint(body))
        } catch where isDecided(error) {
            guard let response = idempotency.render(.failure(error)) else { throw error }
            try await rows.recordResponse(key, fingerprint: idempotency.fingerprint, response: response, at: Timestamp.milliseconds(Date()))
            return .refused(error)
        }
    }

    /// Stores the answer of a first run's value (positioned already), when `idempotency` renders one.
    @inlinable
    public static func recordSuccess<Rows: WriteRows, Value: Sendable>(
        _ rows: Rows, _ idempotency: IdempotentRequest<Value>, _ value: Value
    ) async throws {
        guard let response = idempotency.render(.success(value)) else { return }
        try await rows.recordResponse(
            idempotency.key, fingerprint: idempotency.fingerprint, response: response, at: Timestamp.milliseconds(Date()))
    }

    /// An outcome of the request itself (a refusal), which is stored and replayed, unlike a failure
    /// of storage (`unavailable`, the backend's own errors), which fails the whole transaction.
    @inlinable
    public static func isDecided(_ error: any Error) -> Bool {
        if let error = error as? StoreError, case .unavailable = error { return false }
        return error is StoreError || error is DomainError
    }

    // MARK: Steps

    /// The device's navigation as a write starts (held when `hold`). A device with a row needs no
    /// more: its row orders its writes (held, or written only at the version read). A device's first
    /// write queues behind any other first write of it (`queueWrites`) and reads again, so that two
    /// cannot both create it.
    @inlinable
    @inline(never)
    static func currentNavigation<Rows: WriteRows>(_ rows: Rows, _ clientID: ClientID, hold: Bool, user: UserID) async throws -> Navigation {
        if let row = try await rows.client(clientID, hold: hold) { return try owned(row, clientID: clientID, user: user) }
        try await rows.queueWrites(of: clientID)
        return try owned(try await rows.client(clientID, hold: hold), clientID: clientID, user: user)
    }

    /// The navigation in `row` if `user` owns it, the root state if nobody wrote it, else `notFound`.
    @inlinable
    public static func owned(_ row: StoredClient?, clientID: ClientID, user: UserID) throws -> Navigation {
        guard let row else { return .unwritten(clientID: clientID) }
        guard row.owner == user else { throw StoreError.notFound("no client \(clientID)") }
        return row.navigation
    }

    /// Marks an item deleted, with its entry, and repairs every other device that showed it.
    @inlinable
    @inline(never)
    static func tombstone<Rows: WriteRows>(_ rows: Rows, _ stored: StoredItem<Rows.ItemRow>, origin: Origin, exceptClient: ClientID?) async throws {
        let now = Timestamp.milliseconds(Date())
        try await rows.tombstone(stored, at: now)
        try await rows.append(
            entity: .item, op: .delete, id: stored.item.id.description, owner: nil, value: Item?.none, before: stored.item, origin: origin,
            at: now, ownerClient: nil)
        try await repairNavigation(rows, afterDeleting: stored.item.id, origin: origin, exceptClient: exceptClient)
    }

    /// Repairs every navigation the delete of an item changes (but `exceptClient`'s, which the
    /// command itself handled), in client_id order: those whose item references hold it.
    @inlinable
    @inline(never)
    static func repairNavigation<Rows: WriteRows>(_ rows: Rows, afterDeleting id: ItemID, origin: Origin, exceptClient: ClientID?) async throws {
        for clientID in try await rows.clientsReferencing(id) where clientID != exceptClient {
            guard let row = try await rows.client(clientID, hold: true) else { continue }
            let repaired = row.navigation.state.repaired(afterDeleting: id)
            guard repaired != row.navigation.state else { continue }
            try await saveNavigation(rows, clientID: clientID, owner: row.owner, state: repaired, previous: row.navigation, origin: origin)
        }
    }

    /// Writes a new version of a navigation and its change entry, its time never going back;
    /// returns the navigation and its JSON as the entry holds it.
    @inlinable
    @inline(never)
    @discardableResult
    static func saveNavigation<Rows: WriteRows>(
        _ rows: Rows, clientID: ClientID, owner: UserID, state: NavigationState, previous: Navigation, origin: Origin
    ) async throws -> (navigation: Navigation, json: WrittenJSON) {
        let now = max(Timestamp.milliseconds(Date()), previous.updatedAt.map(Timestamp.milliseconds) ?? 0)
        let navigation = Navigation(
            clientID: clientID, state: state, version: previous.version + 1, updatedAt: Timestamp.date(milliseconds: now))
        // The state's JSON for the device's row, and the navigation's around it for the entry.
        let stateJSON = state.jsonBytes
        let json = WrittenJSON(jsonBytes: navigation.jsonBytes(stateJSON: stateJSON))
        let ownerChanged = origin.user == owner
        try await rows.append(
            entity: .navigation, op: .upsert, id: clientID.rawValue, owner: owner, value: json, before: nil, origin: origin, at: now,
            ownerClient: ownerChanged ? clientID : nil)
        try await rows.saveClient(navigation, stateJSON: stateJSON, owner: owner, ownerChanged: ownerChanged)
        return (navigation, json)
    }

    /// Refuses a new device beyond its owner's cap; existing devices are never refused.
    @inlinable
    @inline(never)
    static func checkNewClient<Rows: WriteRows>(_ rows: Rows, previous: Navigation, owner: UserID, limits: StoreLimits) async throws {
        guard previous.version == 0 else { return }
        guard try await rows.clientCount(owner: owner) < limits.clientsPerUser else {
            throw StoreError.domain(
                .validationFailed(field: "clientID", message: "a user may have at most \(limits.clientsPerUser) clients (devices)"))
        }
    }

    /// `ids` without repeats, in id order (the order a backend that locks rows locks items in).
    @inlinable
    static func inIDOrder(_ ids: [ItemID]) -> [ItemID] {
        // Most writes name one item: no set, no sort.
        guard ids.count > 1 else { return ids }
        return Set(ids).sorted { $0.description < $1.description }
    }

    /// An item upsert's entry, at the item's update time, with the item as it was (nil: created).
    @inlinable
    @inline(never)
    @discardableResult
    static func logUpsert<Rows: WriteRows>(_ rows: Rows, _ item: Item, before: Item?, origin: Origin) async throws -> WrittenJSON {
        let json = WrittenJSON(item)
        try await rows.append(
            entity: .item, op: .upsert, id: item.id.description, owner: nil, value: json, before: before, origin: origin,
            at: Timestamp.milliseconds(item.updatedAt), ownerClient: nil)
        return json
    }

    @inlinable
    static func validated(_ draft: Draft) throws -> ValidDraft {
        do {
            return try ValidDraft(draft)
        } catch {
            throw StoreError.domain(error)
        }
    }
}
