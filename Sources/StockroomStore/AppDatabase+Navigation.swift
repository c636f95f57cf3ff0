import Foundation
import GRDB
import StockroomCore
import StockroomStorage

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
        let limits = limits
        return try await perform(nil) { rows in
            try await WriteRules.replaceNavigation(rows, clientID: clientID, state: state, precondition: precondition, origin: origin, limits: limits)
        }.value
    }

    /// Applies one command to `clientID`'s navigation in one transaction: the navigation change,
    /// any item change, the repair of other devices, and their change entries. With `idempotency`, a
    /// retry gets the first run's stored response and applies nothing.
    @discardableResult
    public func runCommand(
        _ command: Command, clientID: ClientID, origin: Origin, idempotency: IdempotentRequest<CommandOutcome>? = nil
    ) async throws -> Replayable<CommandOutcome> {
        let limits = limits
        return try await perform(idempotency, position: { $0.positioned(at: $1) }) { rows in
            try await WriteRules.runCommand(rows, command, clientID: clientID, origin: origin, limits: limits)
        }
    }

    /// `runCommand` inside the caller's transaction.
    func applyCommand(
        _ db: Database, _ command: Command, clientID: ClientID, origin: Origin, limits: StoreLimits
    ) throws -> CommandOutcome {
        try SQLiteWriteRows.run(db, observer: observer) { rows in
            try Self.positioned(
                try await WriteRules.runCommand(rows, command, clientID: clientID, origin: origin, limits: limits), { $0.positioned(at: $1) }, rows)
        }
    }

    /// The navigation of `clientID` if `user` owns it, the root state if nobody wrote it, else `notFound`.
    static func ownedNavigation(_ db: Database, clientID: ClientID, user: UserID) throws -> Navigation {
        guard let record = try ClientRecord.find(db, clientID: clientID) else { return .unwritten(clientID: clientID) }
        return try WriteRules.owned(
            StoredClient(navigation: try record.navigation, owner: UserID(stored: record.owner)), clientID: clientID, user: user)
    }
}
