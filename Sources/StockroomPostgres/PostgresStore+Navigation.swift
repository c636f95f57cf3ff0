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

extension PostgresStore {
    public func navigation(clientID: ClientID, user: UserID) async throws -> Navigation {
        try await read { connection in
            let row = try await connection.rows(Statements.ClientByID(clientID: clientID), logger: self.logger).first
            return try WriteRules.owned(row.map { StoredClient(navigation: try $0.navigation, owner: $0.owner) }, clientID: clientID, user: user)
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

    public func replaceNavigation(clientID: ClientID, state: NavigationState, precondition: VersionPrecondition?, origin: Origin)
        async throws -> Navigation
    {
        let limits = self.limits
        return try await write { write in
            try await WriteRules.replaceNavigation(write, clientID: clientID, state: state, precondition: precondition, origin: origin, limits: limits)
        }
    }

    @discardableResult
    public func runCommand(
        _ command: Command, clientID: ClientID, origin: Origin, idempotency: IdempotentRequest<CommandOutcome>? = nil
    ) async throws -> Replayable<CommandOutcome> {
        let limits = self.limits
        return try await perform(idempotency, plan: .command(command, clientID: clientID), position: { $0.positioned(at: $1) }) { write in
            try await WriteRules.runCommand(write, command, clientID: clientID, origin: origin, limits: limits)
        }
    }
}
