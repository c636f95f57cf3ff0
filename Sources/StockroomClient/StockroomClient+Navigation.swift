import Foundation

extension StockroomClient {
    /// The device's navigation (`GET /v1/clients/{clientID}/navigation`); a device never written
    /// reads as the root state at version 0.
    public func navigation(of clientID: ClientID) async throws -> Navigation {
        try await call(Navigation.self, .GET, "/v1/clients/\(clientID)/navigation").value
    }

    /// Replaces the device's whole navigation, as a deep link does (`PUT`), only if it is at
    /// `ifVersion` when one is given. A newer version throws `preconditionFailed` with the server's
    /// `currentNavigation`.
    public func putNavigation(_ state: NavigationState, of clientID: ClientID, ifVersion: Int? = nil) async throws -> Navigation {
        var headers: [(String, String)] = []
        if let ifVersion { headers.append(("If-Match", Self.entityTag(ifVersion))) }
        do {
            return try await call(Navigation.self, .PUT, "/v1/clients/\(clientID)/navigation", json: try Self.encode(state), headers: headers).value
        } catch var error as StockroomError where error.code == .preconditionFailed {
            error.currentNavigation = try? await navigation(of: clientID)
            throw error
        }
    }

    /// Every device of this token's user that has written its navigation, most recently changed first
    /// (`GET /v1/users/me/navigation`).
    public func devices() async throws -> [Navigation] {
        try await call(NavigationList.self, .GET, "/v1/users/me/navigation").value.clients
    }

    /// Whether each device of this token's user that has written its navigation is open now, and
    /// when it was last seen (`GET /v1/users/me/navigation`).
    public func devicePresence() async throws -> [ClientID: Presence] {
        try await call(NavigationList.self, .GET, "/v1/users/me/navigation").value.presence
    }

    /// Sends one command for the device (`POST /v1/clients/{clientID}/commands`). Sending it again with
    /// the same `idempotencyKey` (after a lost answer) applies it once: the answer then says `replayed`.
    public func send(_ command: Command, from clientID: ClientID, idempotencyKey: String = newIdempotencyKey()) async throws -> CommandResult {
        let (reply, answer) = try await call(
            CommandResultJSON.self, .POST, "/v1/clients/\(clientID)/commands", json: try Self.encode(CommandRequestBody(command: command)),
            headers: [("Idempotency-Key", idempotencyKey)])
        return CommandResult(
            navigation: reply.navigation, item: reply.item, cursor: reply.cursor,
            replayed: answer.headers.first(name: "Idempotency-Replayed") == "true")
    }

    /// Copies another device's navigation, draft included, onto `clientID` (the `restore` command):
    /// the handoff.
    public func `continue`(_ clientID: ClientID, from source: ClientID, idempotencyKey: String = newIdempotencyKey()) async throws -> CommandResult {
        try await send(.restore(fromClientID: source), from: clientID, idempotencyKey: idempotencyKey)
    }
}

extension StockroomClient {
    /// Every live item and this user's devices, read in one transaction, with the cursor the feed
    /// continues from (`GET /v1/snapshot`).
    public func snapshot(filter: ItemFilter? = nil) async throws -> Snapshot {
        try await call(Snapshot.self, .GET, "/v1/snapshot", query: [("filter", filter?.text)]).value
    }

    /// What a client that holds the items matching `old` (nil: every item) at `since` needs to
    /// hold those matching `new` instead, without a refetch (`GET /v1/snapshot?filter=&fromFilter=&since=`):
    /// upsert ``FilterDelta/items``, drop ``FilterDelta/removed``, then follow `new` from
    /// ``FilterDelta/cursor``. A cursor the server no longer has throws `resyncRequired` (410).
    public func refilter(from old: ItemFilter?, to new: ItemFilter?, since: FeedCursor) async throws -> FilterDelta {
        try await call(
            FilterDelta.self, .GET, "/v1/snapshot", query: [("filter", new?.text), ("fromFilter", old?.text), ("since", since.encoded)]
        ).value
    }

    /// One batch of changes after `start` (`GET /v1/changes`); with `wait` it long-polls up to that long
    /// for a change (in whole seconds, a part of one rounded up). A cursor the server no longer has throws `resyncRequired` (410).
    public func changes(
        from start: FeedStart, limit: Int = 100, topics: Set<Topic> = Set(Topic.allCases), filter: ItemFilter? = nil, wait: Duration? = nil
    ) async throws -> ChangeBatch {
        try await changePage(from: start, limit: limit, topics: topics, filter: filter, wait: wait).batch
    }

    /// `wait=` in the whole seconds the server takes: a part of one rounds up, so that a long-poll
    /// never waits less than asked (a wait under a second is not a poll without waiting).
    static func waitParameter(_ wait: Duration) -> String {
        let (seconds, attoseconds) = wait.components
        return "\(max(0, seconds + (attoseconds > 0 ? 1 : 0)))"
    }

    /// `changes(from:…)`, and the bytes of the answer's body (what a feed's buffer counts).
    func changePage(
        from start: FeedStart, limit: Int, topics: Set<Topic>, filter: ItemFilter?, wait: Duration?
    ) async throws -> (batch: ChangeBatch, bytes: Int) {
        var query: [(String, String?)] = [
            ("since", Self.since(start)), ("limit", "\(limit)"), ("topics", Self.topics(topics)), ("filter", filter?.text),
        ]
        if let wait { query.append(("wait", Self.waitParameter(wait))) }
        let (batch, answer) = try await call(ChangeBatch.self, .GET, "/v1/changes", query: query)
        return (batch, answer.body.count)
    }

    /// The feed as an `AsyncSequence` of events, over Server-Sent Events, a WebSocket or long-polls
    /// (``FeedOptions/transport``): it resumes after drops, and after a `410` takes a new snapshot
    /// and says so. See ``ChangeFeed``.
    public func feed(from start: FeedStart = .snapshot, options: FeedOptions = FeedOptions()) -> ChangeFeed {
        ChangeFeed(client: self, start: start, options: options)
    }

    static func since(_ start: FeedStart) -> String? {
        switch start {
        case .snapshot, .beginning: nil
        case .now: "now"
        case .after(let cursor): cursor.encoded
        }
    }

    static func topics(_ topics: Set<Topic>) -> String {
        Topic.allCases.filter(topics.contains).map(\.rawValue).joined(separator: ",")
    }
}

extension StockroomClient {
    /// Creates a token for `user` with `role` (admins only); its secret is in the answer, once.
    public func createToken(user: UserID, role: Role) async throws -> NewToken {
        return try await call(NewToken.self, .POST, "/v1/tokens", json: try Self.encode(TokenRequestBody(user: user.rawValue, role: role))).value
    }

    /// Every token, without secrets (admins only).
    public func tokens() async throws -> [TokenInfo] {
        try await call(TokenList.self, .GET, "/v1/tokens").value.tokens
    }

    /// Revokes a token at once (admins only).
    public func revokeToken(id: TokenID) async throws {
        try Self.check(try await send(.DELETE, "/v1/tokens/\(Self.encodePathSegment(id.rawValue))"))
    }
}
