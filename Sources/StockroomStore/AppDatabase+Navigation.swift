import Foundation
import GRDB
import StockroomCore
import StockroomStorage
import StockroomWire

extension AppDatabase {
    /// The caller's navigation of `clientID`; the root state if never written; `notFound` if another user's.
    public func navigation(clientID: ClientID, user: UserID) async throws -> Navigation {
        try await read { db in try Self.ownedNavigation(db, clientID: clientID, user: user) }
    }

    /// Every written navigation of `user`, the one the user changed most recently first.
    public func navigations(user: UserID) async throws -> [Navigation] {
        try await read { db in
            try ClientRecord
                .filter(ClientRecord.Columns.owner == user.rawValue)
                .order(ClientRecord.Columns.ownerChangeSeq.desc)
                .fetchAll(db)
                .map { try $0.navigation }
        }
    }

    /// Replaces the whole navigation of `clientID`, as a deep link does; every item it names must exist.
    public func replaceNavigation(
        clientID: ClientID,
        state: NavigationState,
        precondition: VersionPrecondition?,
        origin: Origin
    ) async throws -> Navigation {
        try await write { db in
            try Self.applyReplaceNavigation(db, clientID: clientID, state: state, precondition: precondition, origin: origin, limits: limits)
        }
    }

    /// `replaceNavigation` inside the caller's transaction.
    static func applyReplaceNavigation(
        _ db: Database, clientID: ClientID, state: NavigationState, precondition: VersionPrecondition?, origin: Origin,
        limits: StoreLimits
    ) throws -> Navigation {
        let current = try ownedNavigation(db, clientID: clientID, user: origin.user)
        do {
            try state.checkSize()
        } catch {
            throw StoreError.domain(error)
        }
        if let precondition, !precondition.matches(current.version) {
            throw StoreError.preconditionFailed(currentVersion: current.version)
        }
        var items: [ItemID: Item] = [:]
        for id in state.referencedItemIDs {
            guard let record = try ItemRecord.live(db, id: id) else {
                let field = state.path.contains(.item(id: id)) ? "path" : "destination"
                throw StoreError.domain(.validationFailed(field: field, message: "no item \(id)"))
            }
            items[id] = try record.item
        }
        let state = state.rendered(items: items)
        if current.version > 0, current.state == state { return current }
        try checkNewClient(db, previous: current, owner: origin.user, limits: limits)
        return try saveNavigation(db, clientID: clientID, owner: origin.user, state: state, previous: current, origin: origin)
    }

    /// Applies one command to `clientID`'s navigation in one transaction: the navigation change,
    /// any item change, the repair of other devices, and their change entries. With `idempotency`, a
    /// retry gets the first run's stored response and applies nothing.
    @discardableResult
    public func runCommand(
        _ command: Command, clientID: ClientID, origin: Origin, idempotency: IdempotentRequest<CommandOutcome>? = nil
    ) async throws -> Replayable<CommandOutcome> {
        try await perform(idempotency) { db in try Self.applyCommand(db, command, clientID: clientID, origin: origin, limits: limits) }
    }

    /// `runCommand` inside the caller's transaction.
    static func applyCommand(
        _ db: Database, _ command: Command, clientID: ClientID, origin: Origin, limits: StoreLimits
    ) throws -> CommandOutcome {
        let current = try ownedNavigation(db, clientID: clientID, user: origin.user)
        var items: [ItemID: Item] = [:]
        var records: [ItemID: ItemRecord] = [:]
        for id in command.itemsToLookUp(in: current.state) {
            if let record = try ItemRecord.live(db, id: id) {
                records[id] = record
                items[id] = try record.item
            }
        }
        var restoreSource: NavigationState?
        if case .restore(let sourceID) = command,
            let source = try ClientRecord.find(db, clientID: sourceID), UserID(stored: source.owner) == origin.user
        {
            restoreSource = try source.navigation.state
        }
        let transition: Transition
        do {
            transition = try Transition.decide(command, on: current.state, items: items, restoreSource: restoreSource)
        } catch {
            throw StoreError.domain(error)
        }
        var written: Item?
        switch transition.effect {
        case .none:
            break
        case .insert(let fields):
            written = try insertItem(db, id: .random(), fields: fields, origin: origin)
        case .update(let id, let fields, let expectedVersion):
            guard let record = records[id], record.version == expectedVersion else {
                throw StoreError.domain(.invalidTransition("item \(id) changed during the command"))
            }
            written = try writeItem(db, record, fields: fields, origin: origin)
        case .delete(let id):
            guard let record = records[id] else { throw StoreError.domain(.itemDeleted(id)) }
            try tombstone(db, record, origin: origin, exceptClient: clientID)
        }
        var navigation = current
        if transition.state != current.state {
            try checkNewClient(db, previous: current, owner: origin.user, limits: limits)
            navigation = try saveNavigation(db, clientID: clientID, owner: origin.user, state: transition.state, previous: current, origin: origin)
        }
        return CommandOutcome(navigation: navigation, item: written, seq: try ChangeLog.head(db))
    }

    /// Repairs every navigation state pointing at a deleted item (but `exceptClient`, which the command itself handled).
    static func repairNavigation(_ db: Database, afterDeleting id: ItemID, origin: Origin, exceptClient: ClientID?, at: Int64) throws {
        let clientIDs = try ClientItemRefRecord
            .filter(ClientItemRefRecord.Columns.itemID == id.description)
            .order(ClientItemRefRecord.Columns.clientID)
            .select(ClientItemRefRecord.Columns.clientID, as: ClientID.self)
            .fetchAll(db)
        for clientID in clientIDs where clientID != exceptClient {
            guard let record = try ClientRecord.find(db, clientID: clientID) else { continue }
            let current = try record.navigation
            let repaired = current.state.repaired(afterDeleting: id)
            guard repaired != current.state else { continue }
            _ = try saveNavigation(db, clientID: clientID, owner: UserID(stored: record.owner), state: repaired, previous: current, origin: origin)
        }
    }

    /// Writes a new version of a navigation, its item references and its change entry.
    static func saveNavigation(
        _ db: Database, clientID: ClientID, owner: UserID, state: NavigationState, previous: Navigation, origin: Origin
    ) throws -> Navigation {
        let now = max(Timestamp.milliseconds(Date()), previous.updatedAt.map(Timestamp.milliseconds) ?? 0)
        let navigation = Navigation(
            clientID: clientID, state: state, version: previous.version + 1, updatedAt: Timestamp.date(milliseconds: now))
        let seq = try ChangeLog.append(
            db, entity: .navigation, op: .upsert, id: clientID.rawValue, owner: owner, value: navigation, origin: origin, at: now)
        let ownerChangeSeq: Int64 =
            origin.user == owner
            ? seq
            : (try ClientRecord.filter(key: clientID).select(ClientRecord.Columns.ownerChangeSeq, as: Int64.self).fetchOne(db) ?? seq)
        let record = ClientRecord(
            clientID: clientID,
            owner: owner.rawValue,
            state: String(decoding: state.jsonBytes, as: UTF8.self),
            version: navigation.version,
            updatedAt: now,
            ownerChangeSeq: ownerChangeSeq
        )
        try record.upsertCached(db)
        ClientRecord.decodedStates.keep(state, json: record.state)
        try ClientItemRefRecord.replace(db, clientID: clientID, with: state.referencedItemIDs)
        return navigation
    }

    /// Refuses a new client (device) beyond the owner's cap; existing clients are never refused.
    static func checkNewClient(_ db: Database, previous: Navigation, owner: UserID, limits: StoreLimits) throws {
        guard previous.version == 0 else { return }
        // A cached statement, not the query interface (which prepares its statement anew): a first command of a client runs it.
        let count = try Int.fetchOne(db.cachedStatement(sql: ClientRecord.countByOwnerSQL), arguments: [owner.rawValue]) ?? 0
        guard count < limits.clientsPerUser else {
            throw StoreError.domain(
                .validationFailed(field: "clientID", message: "a user may have at most \(limits.clientsPerUser) clients (devices)"))
        }
    }

    /// The navigation of `clientID` if `user` owns it, the root state if nobody wrote it, else `notFound`.
    static func ownedNavigation(_ db: Database, clientID: ClientID, user: UserID) throws -> Navigation {
        guard let record = try ClientRecord.find(db, clientID: clientID) else { return .unwritten(clientID: clientID) }
        guard UserID(stored: record.owner) == user else { throw StoreError.notFound("no client \(clientID)") }
        return try record.navigation
    }
}
