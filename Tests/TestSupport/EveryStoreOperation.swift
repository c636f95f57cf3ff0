import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import Testing

/// Every kind of operation a store serves, run once, for the tests that watch what each backend
/// does underneath (the statements it runs and their plans).
public enum EveryStoreOperation {
    /// One pass over what the server asks of a store: items, commands of every kind, navigation,
    /// idempotent replays, tokens, the feed (filtered too), the CSV export and import, presence and
    /// its expiry.
    public static func run(_ storage: any Storage) async throws {
        let erin = Sample.erin("erin-phone")
        let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: erin, idempotency: nil).value
        let mouse = try await storage.createItem(id: nil, draft: Sample.mouse, origin: erin, idempotency: nil).value
        let batch = try await storage.createItems(
            (0..<4).map { _ in BatchItem(id: nil, draft: Sample.bluetooth) }, origin: erin, idempotency: nil
        ).value.compactMap { creation -> Item? in
            if case .created(let item) = creation { return item }
            return nil
        }
        // Writes that come together, which a backend may gather into one transaction and do in
        // statements for several writes at once.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, item) in batch.enumerated() {
                let device = ClientID(stored: "burst-\(n)")
                group.addTask {
                    _ = try await storage.updateItem(item.id, draft: Sample.mouse, precondition: nil, origin: erin, idempotency: nil)
                }
                group.addTask {
                    _ = try await storage.runCommand(.openEdit(itemID: item.id), clientID: device, origin: Sample.erin(device), idempotency: nil)
                }
            }
            try await group.waitForAll()
        }
        _ = try await storage.updateItem(mouse.id, draft: Sample.keyboard, precondition: nil, origin: erin, idempotency: nil)
        let key = IdempotentRequest<Item>(key: IdempotencyKey(user: "erin", scope: .items, key: "k1"), fingerprint: "f") { TestReply.render($0) }
        _ = try await storage.createItem(id: nil, draft: Sample.mouse, origin: erin, idempotency: key)
        _ = try await storage.createItem(id: nil, draft: Sample.mouse, origin: erin, idempotency: key)

        let commands: [Command] = [
            .selectTab(tab: .settings), .selectTab(tab: .inventory), .push(route: .item(id: keyboard.id)), .pop,
            .push(route: .item(id: mouse.id)), .popToRoot, .openAdd, .updateDraft(draft: Sample.bluetooth), .save(),
            .openEdit(itemID: keyboard.id), .updateDraft(draft: Sample.mouse), .save(), .openEdit(itemID: keyboard.id), .cancel,
            .openDuplicate(itemID: mouse.id), .cancel, .setCheckpoint(name: "here"), .push(route: .item(id: mouse.id)),
            .returnToCheckpoint(name: "here"),
        ]
        for command in commands {
            _ = try await storage.runCommand(command, clientID: "erin-phone", origin: erin, idempotency: nil)
        }
        let laptop = Sample.erin("erin-laptop")
        _ = try await storage.runCommand(.restore(fromClientID: "erin-phone"), clientID: "erin-laptop", origin: laptop, idempotency: nil)
        _ = try await storage.runCommand(.openEdit(itemID: mouse.id), clientID: "erin-laptop", origin: laptop, idempotency: nil)
        _ = try await storage.updateItem(mouse.id, draft: Sample.bluetooth, precondition: nil, origin: erin, idempotency: nil)
        _ = try await storage.runCommand(.save(onConflict: .alert), clientID: "erin-laptop", origin: laptop, idempotency: nil)
        _ = try await storage.runCommand(.resolveConflict(keep: .mine), clientID: "erin-laptop", origin: laptop, idempotency: nil)
        _ = try await storage.runCommand(.push(route: .item(id: keyboard.id)), clientID: "erin-laptop", origin: laptop, idempotency: nil)
        _ = try await storage.runCommand(.openDeleteAlert(itemID: keyboard.id), clientID: "erin-phone", origin: erin, idempotency: nil)
        _ = try await storage.runCommand(.confirmDelete, clientID: "erin-phone", origin: erin, idempotency: nil)
        _ = try await storage.replaceNavigation(clientID: "erin-tablet", state: NavigationState(), precondition: nil, origin: Sample.erin("erin-tablet"))
        _ = try await storage.deleteItem(mouse.id, precondition: nil, origin: erin, idempotency: nil)

        _ = try await storage.navigation(clientID: "erin-phone", user: "erin")
        _ = try await storage.navigations(user: "erin")
        _ = try await storage.listItems(after: nil, limit: 2, query: nil, status: nil)
        let page = try await storage.listItems(after: nil, limit: 1, query: "key", status: nil)
        if let next = page.next { _ = try await storage.listItems(after: next, limit: 1, query: "key", status: nil) }
        _ = try await storage.item(keyboard.id)
        let snapshot = storage.streamSnapshot(user: "erin", items: nil, depth: 4, stallTimeout: .seconds(30))
        while try await snapshot.next() != nil {}

        _ = try await storage.createTokenIfNone(user: "erin", role: .editor)
        let token = try await storage.createToken(user: "otto", role: .editor)
        _ = try await storage.authenticate(secret: token.secret)
        _ = try await storage.isLiveToken(id: token.info.id)
        _ = try await storage.listTokens()
        _ = try await storage.revokeToken(id: token.info.id)
        try await storage.observeTokenRevocations()

        let filter = FeedFilter(user: "erin", topics: [.item, .navigation, .presence])
        _ = try await storage.resolve(.beginning)
        _ = try await storage.readChanges(after: 0, filter: filter, limit: 100)
        _ = try await storage.readEncodedChanges(after: 2, filter: filter, limit: 100)
        _ = try await storage.logStatistics()
        // Part of the inventory: a filtered feed, a refilter, the CSV export and an import.
        let inStock = try ItemFilter(parsing: "quantity >= 1")
        _ = try await storage.readEncodedChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item], items: inStock), limit: 100)
        _ = try await storage.refilter(from: nil, to: inStock, since: try await storage.resolve(.now) - 1)
        let export = storage.streamItems(
            matching: inStock, encoding: ItemStreamEncoding(header: { _ in [] }, item: { _, _ in }), depth: 2, stallTimeout: .seconds(30))
        while try await export.next() != nil {}
        let spool = try ItemImportSpool()
        try spool.append(ItemImportRow(line: 2, id: nil, version: nil, fields: try ValidDraft(Sample.keyboard)))
        try spool.finishWriting()
        _ = try await storage.importItems(spool, rejectedBefore: 0, options: ItemImportOptions(onError: .skip), origin: erin, idempotency: nil)
        _ = try await storage.trimChanges(maxAge: .seconds(3600), maxEntries: 5)

        let now = Date()
        _ = try await storage.recordPresence(PresenceTick(
            daemon: "d1", now: now, leaseUntil: now.addingTimeInterval(30),
            seen: [.init("erin-phone", "erin"): now, .init("erin-watch", "erin"): now],
            opened: [.init("erin-phone", "erin")]))
        _ = try await storage.recordPresence(PresenceTick(
            daemon: "d1", now: now.addingTimeInterval(2), leaseUntil: now.addingTimeInterval(32), closed: [.init("erin-phone", "erin")], renewLeases: true))
        _ = try await storage.presence(of: ["erin-phone", "erin-laptop"], user: "erin", now: now)
        _ = try await storage.removeStaleDevices(notSeenSince: now.addingTimeInterval(3600), limit: 10)
        _ = try await storage.purgeIdempotencyRecords(olderThan: .seconds(0))
    }

    /// The statement-plan tests' verdict: every statement in `scans` (its SQL, then its plan's whole
    /// reads) matches a fragment of `meant`, and every fragment of `meant` matches one, so that the
    /// list stays exact (a meant walk that no longer walks, or no longer runs, leaves it).
    public static func expectOnlyMeant(
        _ scans: [String], meant: [(fragment: String, why: String)], doing what: String = "read a table whole",
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let unmeant = scans.filter { scan in !meant.contains { scan.contains($0.fragment) } }
        #expect(unmeant.isEmpty, "statements that \(what):\n\(unmeant.joined(separator: "\n"))", sourceLocation: sourceLocation)
        let unused = meant.filter { meant in !scans.contains { $0.contains(meant.fragment) } }.map(\.fragment)
        #expect(unused.isEmpty, "listed as meant, but no statement that does \(what) has: \(unused)", sourceLocation: sourceLocation)
    }
}
