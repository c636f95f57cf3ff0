import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage
import StockroomWire

/// A row of `clients` (its `ClientRow.columns`).
struct ClientRow {
    static let columns = "client_id, owner, state, version, updated_at"

    var clientID: ClientID
    var owner: UserID
    var state: String
    var version: Int64
    var updatedAt: Int64

    init(_ row: PostgresRow) throws {
        let (clientID, owner, state, version, updatedAt) = try row.decode((String, String, String, Int64, Int64).self)
        self.clientID = ClientID(stored: clientID)
        self.owner = UserID(stored: owner)
        self.state = state
        self.version = version
        self.updatedAt = updatedAt
    }

    var navigation: Navigation {
        get throws {
            Navigation(
                clientID: clientID, state: try JSONCoding.decoder().decode(NavigationState.self, from: Data(state.utf8)),
                version: Int(version), updatedAt: Timestamp.date(milliseconds: updatedAt))
        }
    }
}

/// Which rows a navigation write locks, and in what order, so that no two writers wait on each
/// other in a circle: (1) the client's advisory lock (every command and replacement of one client
/// queue there), (2) the items the write reads, in id order (`FOR UPDATE`), (3) client rows, in
/// client_id order, (4) `log_head`, last (`PostgresWrite.appendLog`). A deadlock PostgreSQL still
/// detects runs the write again.
extension PostgresStore {
    public func navigation(clientID: ClientID, user: UserID) async throws -> Navigation {
        try await read { connection in
            let row = try await connection.rows(Statements.ClientByID(clientID: clientID), logger: self.logger).first
            return try Self.owned(row, clientID: clientID, user: user)
        }
    }

    public func navigations(user: UserID) async throws -> [Navigation] {
        try await read { connection in
            try await connection.query(
                "SELECT \(unescaped: ClientRow.columns) FROM clients WHERE owner = \(user.rawValue) ORDER BY owner_change_seq DESC",
                logger: self.logger
            ).collect().map { try ClientRow($0).navigation }
        }
    }

    /// The navigation of `row` if `user` owns it, the root state if nobody wrote it, else `notFound`.
    static func owned(_ row: ClientRow?, clientID: ClientID, user: UserID) throws -> Navigation {
        guard let row else { return .unwritten(clientID: clientID) }
        guard row.owner == user else { throw StoreError.notFound("no client \(clientID)") }
        return try row.navigation
    }

    /// Takes the client's advisory lock for the rest of the transaction.
    static func lockClient(_ write: PostgresWrite, _ clientID: ClientID) async throws {
        _ = try await write.rows(Statements.AdvisoryLock(name: "client:" + clientID.rawValue))
    }

    /// The client's row, locked.
    static func lockedClient(_ write: PostgresWrite, _ clientID: ClientID) async throws -> ClientRow? {
        try await write.rows(Statements.LockedClient(clientID: clientID)).first
    }

    public func replaceNavigation(clientID: ClientID, state: NavigationState, precondition: VersionPrecondition?, origin: Origin)
        async throws -> Navigation
    {
        let limits = self.limits
        return try await write { write in
            try await Self.lockClient(write, clientID)
            let current = try Self.owned(try await Self.lockedClient(write, clientID), clientID: clientID, user: origin.user)
            do throws(DomainError) {
                try state.checkSize()
            } catch {
                throw StoreError.domain(error)
            }
            if let precondition, !precondition.matches(current.version) {
                throw StoreError.preconditionFailed(currentVersion: current.version)
            }
            // Locked, so that a delete of one of them waits for this write and then repairs it.
            var items: [ItemID: Item] = [:]
            for id in state.referencedItemIDs.sorted(by: { $0.description < $1.description }) {
                guard let row = try await Self.lockedItem(write, id: id) else {
                    let field = state.path.contains(.item(id: id)) ? "path" : "destination"
                    throw StoreError.domain(.validationFailed(field: field, message: "no item \(id)"))
                }
                items[id] = try row.item
            }
            let state = state.rendered(items: items)
            if current.version > 0, current.state == state { return current }
            try await Self.checkNewClient(write, previous: current, owner: origin.user, limits: limits)
            return try await Self.saveNavigation(write, clientID: clientID, owner: origin.user, state: state, previous: current, origin: origin)
        }
    }

    @discardableResult
    public func runCommand(
        _ command: Command, clientID: ClientID, origin: Origin, idempotency: IdempotentRequest<CommandOutcome>? = nil
    ) async throws -> Replayable<CommandOutcome> {
        let limits = self.limits
        return try await perform(idempotency) { write in
            try await Self.lockClient(write, clientID)
            let current: Navigation
            var items: [ItemID: Item] = [:]
            var rows: [ItemID: ItemRow] = [:]
            if command.readsItems {
                // Read unlocked to learn which items the command needs; the row is locked after them,
                // and a repair that slipped in between (a delete elsewhere) runs the command again.
                let unlocked = try await write.rows(Statements.ClientByID(clientID: clientID)).first
                current = try Self.owned(unlocked, clientID: clientID, user: origin.user)
                for id in Set(command.itemsToLookUp(in: current.state)).sorted(by: { $0.description < $1.description }) {
                    if let row = try await Self.lockedItem(write, id: id) {
                        rows[id] = row
                        items[id] = try row.item
                    }
                }
                if let locked = try await Self.lockedClient(write, clientID), Int(locked.version) != current.version {
                    throw PostgresRetry()
                }
            } else {
                // No items to lock first: the row, locked, is the state the command applies to.
                current = try Self.owned(try await Self.lockedClient(write, clientID), clientID: clientID, user: origin.user)
            }
            var restoreSource: NavigationState?
            if case .restore(let sourceID) = command,
                let source = try await write.query(
                    "SELECT \(unescaped: ClientRow.columns) FROM clients WHERE client_id = \(sourceID.rawValue)"
                ).first.map(ClientRow.init), source.owner == origin.user
            {
                restoreSource = try source.navigation.state
            }
            let transition: Transition
            do throws(DomainError) {
                transition = try Transition.decide(command, on: current.state, items: items, restoreSource: restoreSource)
            } catch {
                throw StoreError.domain(error)
            }
            var written: Item?
            switch transition.effect {
            case .none:
                break
            case .insert(let fields):
                // A fresh random id that exists already: run the command again with another.
                guard let inserted = try await Self.insertItem(write, id: .random(), fields: fields, origin: origin) else {
                    throw PostgresRetry()
                }
                written = inserted
            case .update(let id, let fields, let expectedVersion):
                guard let row = rows[id], Int(row.version) == expectedVersion else {
                    throw StoreError.domain(.invalidTransition("item \(id) changed during the command"))
                }
                written = try await Self.writeItem(write, row, fields: fields, origin: origin)
            case .delete(let id):
                guard let row = rows[id] else { throw StoreError.domain(.itemDeleted(id)) }
                try await Self.tombstone(write, row, origin: origin, exceptClient: clientID)
            }
            var navigation = current
            if transition.state != current.state {
                try await Self.checkNewClient(write, previous: current, owner: origin.user, limits: limits)
                navigation = try await Self.saveNavigation(
                    write, clientID: clientID, owner: origin.user, state: transition.state, previous: current, origin: origin)
            }
            return CommandOutcome(navigation: navigation, item: written, seq: try await write.appendLog())
        }
    }

    /// Repairs every navigation state pointing at a deleted item (but `exceptClient`, which the
    /// command itself handled), in client_id order.
    static func repairNavigation(_ write: PostgresWrite, afterDeleting id: ItemID, origin: Origin, exceptClient: ClientID?, at: Int64)
        async throws
    {
        let clientIDs = try await write.query(
            "SELECT client_id FROM client_item_refs WHERE item_id = \(id.description) ORDER BY client_id"
        ).map { ClientID(stored: try $0.decode(String.self)) }
        for clientID in clientIDs where clientID != exceptClient {
            guard let row = try await lockedClient(write, clientID) else { continue }
            let current = try row.navigation
            let repaired = current.state.repaired(afterDeleting: id)
            guard repaired != current.state else { continue }
            _ = try await saveNavigation(write, clientID: clientID, owner: row.owner, state: repaired, previous: current, origin: origin)
        }
    }

    /// Writes a new version of a navigation, its item references and its change entry. The owner's
    /// own change moves `owner_change_seq` to the entry's seq (set when the entries are numbered);
    /// a repair by someone else keeps it.
    static func saveNavigation(
        _ write: PostgresWrite, clientID: ClientID, owner: UserID, state: NavigationState, previous: Navigation, origin: Origin
    ) async throws -> Navigation {
        let now = max(Timestamp.milliseconds(Date()), previous.updatedAt.map(Timestamp.milliseconds) ?? 0)
        let navigation = Navigation(clientID: clientID, state: state, version: previous.version + 1, updatedAt: Timestamp.date(milliseconds: now))
        let stateJSON = String(decoding: state.jsonBytes, as: UTF8.self)
        _ = try await write.rows(
            Statements.SaveClient(
                clientID: clientID, owner: owner, stateJSON: stateJSON, version: Int64(navigation.version), now: now,
                referenced: state.referencedItemIDs.map(\.description)))
        write.append(
            entity: .navigation, op: .upsert, id: clientID.rawValue, owner: owner, value: navigation, origin: origin, at: now,
            ownerClient: origin.user == owner ? clientID : nil)
        return navigation
    }

    /// Refuses a new client (device) beyond the owner's cap; existing clients are never refused.
    /// The owner's advisory lock makes the count and the insert one step across daemons.
    static func checkNewClient(_ write: PostgresWrite, previous: Navigation, owner: UserID, limits: StoreLimits) async throws {
        guard previous.version == 0 else { return }
        try await write.query("SELECT pg_advisory_xact_lock(hashtextextended(\("owner:" + owner.rawValue), 0))")
        let count = try await write.query("SELECT count(*) FROM clients WHERE owner = \(owner.rawValue)").first?.decode(Int64.self) ?? 0
        guard count < limits.clientsPerUser else {
            throw StoreError.domain(
                .validationFailed(field: "clientID", message: "a user may have at most \(limits.clientsPerUser) clients (devices)"))
        }
    }
}

/// The write met a state another transaction changed under it: run it again.
struct PostgresRetry: Error {}
