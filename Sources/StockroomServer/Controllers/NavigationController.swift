import Foundation
import Hummingbird
import StockroomCore
import StockroomWire
import StockroomStorage

/// `/v1/clients/{clientID}/...` and `/v1/users/me/navigation`: each device's navigation state and its commands;
/// `/v1/users/me`: who the caller is.
struct NavigationController {
    let database: any Storage
    /// Where a command counts as its device being seen.
    let presence: PresenceTracker

    func addRoutes(to routes: RouterGroup<CallerContext>) {
        routes.get("clients/:clientID/navigation", use: get)
        routes.put("clients/:clientID/navigation", use: replace)
        routes.post("clients/:clientID/commands", use: command)
        routes.get("users/me/navigation", use: mine)
        routes.get("users/me", use: me)
    }

    @Sendable func get(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        let clientID = try Self.clientID(context)
        let navigation = try await database.navigation(clientID: clientID, user: caller.user)
        let presence = try await database.presence(of: [clientID], user: caller.user, now: Date())
        return Reply.json(
            writing: PresentNavigation(navigation: navigation, presence: presence[clientID]),
            headers: [.eTag: Reply.etag(navigation.version)]
        ).response
    }

    @Sendable func replace(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        let clientID = try Self.clientID(context)
        let body = try await request.decodeJSON(NavigationReplacementBody.self, context: context).value
        let precondition = try request.versionPrecondition()
        if let bodyClientID = body.clientID, bodyClientID != clientID {
            throw APIError.validationFailed("clientID", "clientID in the body must match the path")
        }
        let navigation = try await database.replaceNavigation(
            clientID: clientID, state: body.state, precondition: precondition,
            origin: Origin(user: caller.user, clientID: clientID))
        return try Self.navigationReply(navigation).response
    }

    /// `Identity`: so that a client (the inspector) can tell what its token may do.
    @Sendable func me(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        return Reply.json(writing: Identity(user: caller.user, role: caller.role, tokenID: caller.id)).response
    }

    @Sendable func mine(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        let clients = try await database.navigations(user: caller.user)
        let presence = try await database.presence(of: clients.map(\.clientID), user: caller.user, now: Date())
        return Reply.json(writing: NavigationList(clients: clients, presence: presence)).response
    }

    @Sendable func command(_ request: Request, context: CallerContext) async throws -> Response {
        let body = try await request.decodeJSON(CommandRequestBody.self, context: context)
        let run = try commandRun(body, request: request, context: context)
        let result: Replayable<CommandOutcome>
        do {
            result = try await database.runCommand(run.command, clientID: run.clientID, origin: run.origin, idempotency: run.idempotency)
        } catch {
            Self.countRefusal(of: run.command, error)
            throw error
        }
        return try Self.commandAnswer(result, command: run.command, epoch: run.epoch)
    }

    /// What a command's write needs, and the checks before it, in the contract's order: the role
    /// (`403`, which the command decides) before the path's clientID (`400`). Synchronous and out of
    /// line, as the other steps of `command`: their locals then stay out of its async frame, which
    /// every command allocates.
    private struct CommandRun {
        let command: Command
        let clientID: ClientID
        let origin: Origin
        let idempotency: IdempotentRequest<CommandOutcome>?
        let epoch: String
    }

    @inline(never)
    private func commandRun(
        _ body: JSONBody<CommandRequestBody>, request: Request, context: CallerContext
    ) throws -> CommandRun {
        let command = body.value.command
        let caller = context.caller
        // A refused command is still a command from its device: it is seen all the same.
        let named = ClientID(context.parameters.get("clientID") ?? "")
        if let named { presence.seen(named, user: caller.user) }
        if command.writesItems, caller.role < .editor {
            let why = if case .openURL = command { "it opens a screen that writes an item" } else { "it writes an item" }
            throw APIError.forbidden("role \(caller.role.rawValue) may not \(command.name): \(why) (editors and admins only)")
        }
        let clientID = try ClientID.required(named)
        let epoch = database.epoch
        let idempotency = try request.idempotency(user: caller.user, scope: .client(clientID), body: body.bytes) {
            (outcome: CommandOutcome) in try Self.commandReply(outcome, epoch: epoch)
        }
        let origin = Origin(user: caller.user, clientID: clientID, idempotencyKey: idempotency?.key.key)
        return CommandRun(command: command, clientID: clientID, origin: origin, idempotency: idempotency, epoch: epoch)
    }

    @inline(never)
    private static func countRefusal(of command: Command, _ error: any Error) {
        commandCounters.increment(command: command.name, outcome: APIError(error).code.rawValue)
    }

    @inline(never)
    private static func commandAnswer(_ result: Replayable<CommandOutcome>, command: Command, epoch: String) throws -> Response {
        commandCounters.increment(command: command.name, outcome: "ok")
        switch result {
        case .fresh(let outcome): return try commandReply(outcome, epoch: epoch).response
        case .replayed(let stored): return try Reply(replaying: stored).response
        }
    }

    /// The path's clientID; `400 invalidParameter` when malformed.
    static func clientID(_ context: CallerContext) throws -> ClientID {
        try ClientID.required(ClientID(context.parameters.get("clientID") ?? ""))
    }

    static func navigationReply(_ navigation: Navigation) throws -> Reply {
        Reply.json(writing: navigation, headers: [.eTag: Reply.etag(navigation.version)])
    }

    @Sendable static func commandReply(_ outcome: CommandOutcome, epoch: String) throws -> Reply {
        Reply.json(writing: CommandReplyJSON(outcome: outcome, cursor: FeedCursor(epoch: epoch, seq: outcome.seq)),
                   headers: [.eTag: Reply.etag(outcome.navigation.version)])
    }

    /// A command's answer (`CommandResultJSON`), its navigation and item spliced from the JSON
    /// their change entries were written with.
    struct CommandReplyJSON: JSONWritable {
        let outcome: CommandOutcome
        let cursor: FeedCursor

        func write(to json: inout JSONWriter) {
            CommandResultJSON.write(
                navigation: outcome.navigationJSON ?? WrittenJSON(outcome.navigation),
                item: outcome.itemJSON ?? outcome.item.map(WrittenJSON.init), cursor: cursor, to: &json)
        }
    }

    static let commandCounters = CommandCounters()
}
