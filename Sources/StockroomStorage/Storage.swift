import Foundation
import StockroomCore
import StockroomWire

/// What the application needs from storage: everything the server reads and writes goes through
/// this, never through a database type. The SQLite implementation is `AppDatabase`
/// (StockroomStore); `StorageContractTests` states what any implementation must do, and runs
/// against each.
///
/// Outcomes are domain values (`Item`, `Navigation`, `CommandOutcome`, pages of the feed) and
/// opaque stored bytes (a replayed request's `StoredResponse`, the change log's `Change` JSON,
/// snapshot chunks), never HTTP statuses or headers. Failures are `StoreError`s (a refused command
/// is `StoreError.domain`).
public protocol Storage: Sendable {
    // MARK: Items

    /// A page of live items in creation order after `after`, optionally filtered by a name query
    /// (case-insensitive substring) and a status.
    func listItems(after: PageCursor?, limit: Int, query: String?, status: StatusFilter?) async throws -> ItemPage
    /// The live item `id`, nil when there is none (or it was deleted).
    func item(_ id: ItemID) async throws -> Item?
    /// Creates an item (version 1) and its change entry in one transaction; `alreadyExists` for an
    /// id that exists or existed.
    func createItem(id: ItemID?, draft: Draft, origin: Origin, idempotency: IdempotentRequest<Item>?) async throws -> Replayable<Item>
    /// Creates up to `BatchItem.maximumCount` items in one transaction, one outcome each.
    func createItems(_ items: [BatchItem], origin: Origin, idempotency: IdempotentRequest<[ItemCreation]>?) async throws
        -> Replayable<[ItemCreation]>
    /// Replaces an item's editable fields, the version one higher; `preconditionFailed` when the
    /// version does not match.
    func updateItem(_ id: ItemID, draft: Draft, precondition: VersionPrecondition?, origin: Origin, idempotency: IdempotentRequest<Item>?)
        async throws -> Replayable<Item>
    /// Deletes an item and repairs every navigation that showed it, with their change entries, in
    /// one transaction.
    func deleteItem(_ id: ItemID, precondition: VersionPrecondition?, origin: Origin, idempotency: IdempotentRequest<Void>?)
        async throws -> Replayable<Void>
    /// Applies a CSV import's rows (`WriteRules.importItems`) in one transaction that no other
    /// write shares; a dry run, and rejects under `abort`, change nothing (`applied` false). With
    /// `idempotency`, a retried import whose rows were applied is answered from the first.
    func importItems(
        _ spool: ItemImportSpool, rejectedBefore: Int, options: ItemImportOptions, origin: Origin,
        idempotency: IdempotentRequest<ItemImportResult>?
    ) async throws -> Replayable<ItemImportResult>
    /// Seeds the demo items into an empty store; false when it holds items.
    func seedDemoItems() async throws -> Bool

    // MARK: Navigation

    /// The navigation of `user`'s device `clientID` (the initial state for a device never seen).
    func navigation(clientID: ClientID, user: UserID) async throws -> Navigation
    /// Every navigation of `user`, the most recently changed first.
    func navigations(user: UserID) async throws -> [Navigation]
    /// Replaces a device's whole navigation state (a restore, a deep link).
    func replaceNavigation(clientID: ClientID, state: NavigationState, precondition: VersionPrecondition?, origin: Origin)
        async throws -> Navigation
    /// Applies a navigation command atomically: `Transition.decide` on the current state and items,
    /// then the rows it changes and their change entries, in one transaction.
    func runCommand(_ command: Command, clientID: ClientID, origin: Origin, idempotency: IdempotentRequest<CommandOutcome>?)
        async throws -> Replayable<CommandOutcome>

    // MARK: Presence

    /// Writes one daemon's presence news (`PresenceTick`) in one transaction: last-seen times,
    /// leases opened, closed, renewed and expired, and a `presence` change for each device whose
    /// online state changed (coalesced); true when a device's change waits for its coalescing
    /// window, so that a later tick should come soon.
    @discardableResult
    func recordPresence(_ tick: PresenceTick) async throws -> Bool
    /// The presence of each of `user`'s `clientIDs` (offline and never seen when the store has none).
    func presence(of clientIDs: [ClientID], user: UserID, now: Date) async throws -> [ClientID: Presence]
    /// Removes up to `limit` devices neither written nor seen since `cutoff`, with their
    /// navigation and draft, each with a `navigation` `delete` change; returns how many went.
    func removeStaleDevices(notSeenSince cutoff: Date, limit: Int) async throws -> Int

    // MARK: Idempotent requests

    /// Forgets decided requests older than `age` (never younger than the contract's minimum).
    func purgeIdempotencyRecords(olderThan age: Duration) async throws -> Int

    // MARK: The feed

    /// The store's epoch: a new one after a restore, so that older cursors are refused.
    var epoch: String { get }
    /// The in-memory fan-out of commits to subscribers, fed by every commit of this store.
    var hub: ChangeHub { get }
    /// A start position as a seq; `resyncRequired` for a cursor of another epoch, beyond the head
    /// or trimmed away.
    func resolve(_ start: FeedStart) async throws -> Int64
    /// Up to `limit` visible changes after `seq`, in commit order.
    func readChanges(after seq: Int64, filter: FeedFilter, limit: Int) async throws -> FeedPage
    /// `readChanges`, already written as the changes of a batch answer.
    func readEncodedChanges(after seq: Int64, filter: FeedFilter, limit: Int) async throws -> EncodedFeedPage
    /// Trims the log to entries younger than `maxAge` and at most `maxEntries`; returns how many went.
    @discardableResult
    func trimChanges(maxAge: Duration, maxEntries: Int) async throws -> Int
    /// How many entries the log holds, and the oldest seq it keeps.
    func logStatistics() async throws -> (entries: Int64, oldestSeq: Int64?)
    /// The items (those matching `items`, when given) and `user`'s navigations with the cursor
    /// they are current at, as the snapshot's JSON in chunks, read in one consistent read.
    func streamSnapshot(user: UserID, items: ItemFilter?, depth: Int, stallTimeout: Duration) -> ChunkPipe
    /// Every live item (those matching `items`, when given) in creation order, read in one
    /// consistent read, written by `encoding` in chunks: its header first, with the cursor the
    /// read is current at (following the feed from it misses nothing), sent as soon as the read
    /// holds, so that a consumer waiting for it can still answer a storage failure with a status.
    func streamItems(matching items: ItemFilter?, encoding: ItemStreamEncoding, depth: Int, stallTimeout: Duration) -> ChunkPipe
    /// What a client that follows the items matching `old` (nil: every item), at `since`, needs to
    /// follow those matching `new` instead, read in one consistent read (`Refilter`);
    /// `resyncRequired` when `since` was trimmed meanwhile.
    func refilter(from old: ItemFilter?, to new: ItemFilter?, since: Int64) async throws -> Refilter
    /// `refilter`'s answer as its JSON, in chunks read in one transaction as `streamSnapshot`'s
    /// are (a resync is the pipe's error before any chunk).
    func streamRefilter(from old: ItemFilter?, to new: ItemFilter?, since: Int64, depth: Int, stallTimeout: Duration) -> ChunkPipe
    /// How many streamed reads (`streamSnapshot`, `streamItems`, `streamRefilter`) may be open at
    /// once without holding up other requests: each holds a read of the store for as long as its
    /// consumer takes to read it.
    var maximumStreamedReads: Int { get }

    // MARK: Tokens

    func createToken(user: UserID, role: Role) async throws -> IssuedToken
    /// A token for `user` unless a live one exists.
    func createTokenIfNone(user: UserID, role: Role) async throws -> IssuedToken?
    func listTokens() async throws -> [TokenInfo]
    /// Revokes a token; false when there is none with that id.
    func revokeToken(id: TokenID) async throws -> Bool
    /// Whether `id` exists and is not revoked.
    func isLiveToken(id: TokenID) async throws -> Bool
    /// The live token with this secret, nil for any other.
    func authenticate(secret: String) async throws -> TokenInfo?
    /// Reads revocations made by other processes into `hub`'s token generation.
    func observeTokenRevocations() async throws
    /// Whether the store learns of other processes' revocations by itself (PostgreSQL: a
    /// notification to its listener, and its poll within a second), so that the server runs no
    /// `TokenRevocationWatcher` calling `observeTokenRevocations` every `auth.revocationCheckMilliseconds`.
    var watchesTokenRevocations: Bool { get }

    // MARK: Operations

    /// Nil when a write can commit now; otherwise why not (for `/ready`).
    func writeProbe() async -> String?
    /// Leaves the stored state compact at shutdown (SQLite: a WAL checkpoint); false when the
    /// backend has nothing to do (PostgreSQL checkpoints by itself).
    @discardableResult
    func checkpoint() throws -> Bool
    /// Shutdown began at `instant`: from now on a write does not wait for a lock another process
    /// holds (SQLite: the busy timeout is 0), so that what is queued ends within shutdown's bound,
    /// and an import still running `ShutdownClock.importGrace` later gives up (`503`).
    func shutdownBegins(at instant: ContinuousClock.Instant)
}

extension Storage {
    /// Shutdown begins now (see `shutdownBegins(at:)`).
    public func shutdownBegins() {
        shutdownBegins(at: .now)
    }
}
