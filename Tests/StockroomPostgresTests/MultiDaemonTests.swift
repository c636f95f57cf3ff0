import Foundation
import StockroomCore
@testable import StockroomPostgres
import StockroomStorage
import StockroomWire
import TestSupport
import Testing

/// What one process used to decide alone, decided once across daemons: each test sends the
/// contending requests through different `PostgresStore`s on one database.
@Suite("PostgreSQL: one decision across daemons", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct MultiDaemonTests {
    static let draft = Draft(name: "Keyboard", color: nil, status: .inStock(quantity: 1))

    /// One idempotency key sent to three daemons at once: applied once; every other answer is the
    /// replay of that one, or `requestInProgress` while it runs.
    @Test(.timeLimit(.minutes(10)))
    func oneKeySentToEveryDaemonAtOnceIsAppliedOnce() async throws {
        try await withDaemons(3) { daemons, _ in
            for round in 0..<5 {
                let key = IdempotencyKey(user: "erin", scope: .items, key: "race-\(round)")
                let request = IdempotentRequest<Item>(key: key, fingerprint: "POST keyboard") { result in
                    guard case .success(let item) = result else { return nil }
                    return StoredResponse(bytes: Array("created \(item.id)".utf8))
                }
                let origin = Origin(user: "erin", clientID: nil, idempotencyKey: key.key)
                let head = try await daemons[0].resolve(.now)
                let answers = await withTaskGroup(of: String.self) { group in
                    for daemon in daemons + daemons {
                        group.addTask {
                            do {
                                switch try await daemon.createItem(id: nil, draft: Self.draft, origin: origin, idempotency: request) {
                                case .fresh(let item): return "created \(item.id)"
                                case .replayed(let stored): return "replayed " + String(decoding: stored.bytes, as: UTF8.self)
                                }
                            } catch StoreError.requestInProgress {
                                return "in progress"
                            } catch {
                                return "failed: \(error)"
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                let created = answers.filter { $0.hasPrefix("created ") }
                #expect(created.count == 1, "\(answers)")
                for answer in answers where answer != created.first {
                    #expect(answer == "in progress" || answer == "replayed " + (created.first ?? ""), "\(answer)")
                }
                #expect(try await daemons[1].resolve(.now) == head + 1)
            }
        }
    }

    /// Two devices saving their drafts of one item through different daemons: one save wins, the
    /// other is a conflict naming the winner's version, and its draft is kept.
    @Test(.timeLimit(.minutes(10)))
    func ofTwoSavesThroughDifferentDaemonsExactlyOneWins() async throws {
        // The loser waits on the winner's row lock (withDaemons' deadline outwaits it).
        try await withDaemons(2) { daemons, _ in
            for round in 0..<5 {
                let item = try await daemons[0].createItem(id: nil, draft: Self.draft, origin: Origin(user: "erin"), idempotency: nil).value
                let devices: [(ClientID, PostgresStore)] = [(ClientID(stored: "phone-\(round)"), daemons[0]), (ClientID(stored: "tablet-\(round)"), daemons[1])]
                for (device, daemon) in devices {
                    let origin = Origin(user: "erin", clientID: device)
                    _ = try await daemon.runCommand(.openEdit(itemID: item.id), clientID: device, origin: origin, idempotency: nil)
                    _ = try await daemon.runCommand(
                        .updateDraft(draft: Draft(name: "From \(device)", color: nil, status: .inStock(quantity: 2))), clientID: device,
                        origin: origin, idempotency: nil)
                }
                let results = await withTaskGroup(of: Result<CommandOutcome, StoreError>.self) { group in
                    for (device, daemon) in devices {
                        group.addTask {
                            do {
                                return .success(
                                    try await daemon.runCommand(.save(), clientID: device, origin: Origin(user: "erin", clientID: device), idempotency: nil)
                                        .value)
                            } catch let error as StoreError {
                                return .failure(error)
                            } catch {
                                return .failure(.unavailable("\(error)"))
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                let wins = results.compactMap { try? $0.get() }
                #expect(wins.count == 1)
                let current = try #require(try await daemons[1].item(item.id))
                #expect(current.version == 2 && current.name == wins.first?.item?.name)
                for case .failure(let error) in results {
                    guard case .domain(.conflict(let named)) = error else {
                        Issue.record("the loser got \(error)")
                        continue
                    }
                    #expect(named == current)
                }
                let drafts = try await daemons[0].navigations(user: "erin").compactMap(\.state.destination?.draft?.name)
                #expect(drafts.count == 1 && drafts[0].hasPrefix("From "))
                for (device, daemon) in devices {
                    _ = try await daemon.runCommand(.cancel, clientID: device, origin: Origin(user: "erin", clientID: device), idempotency: nil)
                }
            }
        }
    }

    /// Both daemons trimming at once: one trims, the watermark is one, and the hubs of both follow it.
    @Test(.timeLimit(.minutes(10)))
    func twoDaemonsTrimmingAtOnceLeaveOneWatermark() async throws {
        try await withDaemons(2) { daemons, _ in
            for _ in 0..<20 { _ = try await daemons[0].createItem(id: nil, draft: Self.draft, origin: Origin(user: "erin"), idempotency: nil) }
            async let first = daemons[0].trimChanges(maxAge: .seconds(3600), maxEntries: 5)
            async let second = daemons[1].trimChanges(maxAge: .seconds(3600), maxEntries: 5)
            let removed = try await [first, second]
            #expect(removed.reduce(0, +) == 15, "\(removed)")
            #expect(try await daemons[1].logStatistics() == (entries: 5, oldestSeq: 16))
            // A cursor before the watermark is refused on either daemon.
            for daemon in daemons {
                await #expect(throws: StoreError.self) { try await daemon.resolve(.after(FeedCursor(epoch: daemon.epoch, seq: 3))) }
            }
        }
    }

    /// `stockroom restore --db-url` after a pg_restore: the database takes a new epoch; the daemons
    /// still running on it stop answering (503) and end their streams; a daemon started on it
    /// serves the new epoch, and refuses every cursor from before.
    @Test(.timeLimit(.minutes(10)))
    func aNewEpochRefusesOldCursorsAndStopsTheDaemonsStillRunning() async throws {
        try await withDaemons(2, pollInterval: .seconds(60)) { daemons, url in
            try await eventually("both daemons listen") { daemons.allSatisfy(\.isListening) }
            _ = try await daemons[0].createItem(id: nil, draft: Self.draft, origin: Origin(user: "erin"), idempotency: nil)
            let old = FeedCursor(epoch: daemons[0].epoch, seq: 1)
            let (was, new) = try await PostgresStore.startNewEpoch(url: url)
            #expect(was == daemons[0].epoch && new != was)
            for daemon in daemons {
                // The poll is a minute away: the notification told them.
                try await eventually("the daemon stops answering") { await daemon.writeProbe()?.contains("new epoch") == true }
                await #expect(throws: StoreError.self) { try await daemon.item(ItemID.random()) }
            }
            let restarted = try await PostgresStore.open(url: url, deadline: TestPostgres.storeDeadline)
            let running = Task { try await restarted.run() }
            defer { running.cancel() }
            #expect(restarted.epoch == new)
            await #expect(throws: StoreError.self) { try await restarted.resolve(.after(old)) }
            #expect(try await restarted.resolve(.after(FeedCursor(epoch: new, seq: 1))) == 1)
        }
    }

    /// A device's feed open on one daemon makes it online for the user on every daemon, and the
    /// presence change reaches a subscriber of another; the daemon's lease expiring (it died)
    /// publishes it offline from another daemon's tick. Ticks of the two daemons at once decide
    /// each flip once.
    @Test(.timeLimit(.minutes(10)))
    func aDeviceOpenOnOneDaemonIsOnlineOnEveryDaemon() async throws {
        try await withDaemons(2) { daemons, _ in
            let now = Date()
            let head = try await daemons[1].resolve(.now)
            async let first = daemons[0].recordPresence(
                PresenceTick(daemon: "a", now: now, leaseUntil: now.addingTimeInterval(30), opened: [.init("phone", "erin")]))
            async let second = daemons[1].recordPresence(
                PresenceTick(daemon: "b", now: now, leaseUntil: now.addingTimeInterval(30), opened: [.init("phone", "erin")]))
            _ = try await (first, second)
            #expect(try await daemons[1].presence(of: ["phone"], user: "erin", now: now)["phone"]?.online == true)
            let filter = FeedFilter(user: "erin", topics: [.presence])
            // What another daemon committed reaches this one's feed by NOTIFY: read until it is there.
            func presenceChanges(count: Int) async throws -> [ChangeEntry] {
                let deadline = ContinuousClock.now + .seconds(10)
                while true {
                    let changes = try await daemons[1].readChanges(after: head, filter: filter, limit: 10).changes
                    if changes.count >= count || ContinuousClock.now > deadline { return changes }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            #expect(try await presenceChanges(count: 1).count == 1, "one change for one flip")

            // Both daemons die: their leases expire, and a third daemon's tick publishes the device offline.
            let later = now.addingTimeInterval(31)
            try await daemons[0].recordPresence(PresenceTick(daemon: "c", now: later, leaseUntil: later.addingTimeInterval(30)))
            let changes = try await presenceChanges(count: 2)
            #expect(changes.count == 2)
            #expect(changes.last?.valueJSON?.contains(#""online":false"#) == true)
            #expect(try await daemons[1].presence(of: ["phone"], user: "erin", now: later)["phone"]?.online == false)
        }
    }

    /// Ticks of two daemons at once, each sighting three devices new to the database for one user
    /// whose `clientsPerUser` room is three: the room is counted once between them, so the user
    /// has three devices seen, not six (each tick counts after the other's commit).
    @Test(.timeLimit(.minutes(10)))
    func ticksOfTwoDaemonsAtOnceFillAUsersRoomOnce() async throws {
        try await withDaemons(2, limits: StoreLimits(clientsPerUser: 3)) { daemons, url in
            for round in 0..<12 {
                let user = UserID(stored: "user-\(round)")
                let now = Date()
                func tick(_ daemon: String) -> PresenceTick {
                    let seen = (0..<3).map { (PresenceTick.Holder(ClientID(stored: "\(daemon)-\(round)-\($0)"), user), now) }
                    return PresenceTick(daemon: daemon, now: now, leaseUntil: now.addingTimeInterval(30), seen: Dictionary(uniqueKeysWithValues: seen))
                }
                async let first = daemons[0].recordPresence(tick("a"))
                async let second = daemons[1].recordPresence(tick("b"))
                _ = try await (first, second)
                let seen = try await withConnection(url) { connection in
                    try await connection.values("SELECT count(*)::bigint FROM devices_seen WHERE owner = \(user.rawValue)", as: Int64.self)
                }
                #expect(seen == [3], "round \(round)")
            }
        }
    }

    /// A filtered feed on one daemon of writes made through others: the moves in and out are the
    /// same as on the daemon that wrote them, from memory or from the table.
    @Test(.timeLimit(.minutes(10)))
    func aFilteredFeedOnOneDaemonSeesMovesMadeThroughOthers() async throws {
        try await withDaemons(3) { daemons, _ in
            let erin = Origin(user: "erin")
            let low = try await daemons[0].createItem(
                id: nil, draft: Draft(name: "Cable", color: nil, status: .inStock(quantity: 2)), origin: erin, idempotency: nil
            ).value
            let high = try await daemons[1].createItem(
                id: nil, draft: Draft(name: "Lamp", color: nil, status: .inStock(quantity: 20)), origin: erin, idempotency: nil
            ).value
            _ = try await daemons[0].updateItem(
                high.id, draft: Draft(name: "Lamp", color: nil, status: .inStock(quantity: 1)), precondition: nil, origin: erin, idempotency: nil)
            _ = try await daemons[1].updateItem(
                low.id, draft: Draft(name: "Cable", color: nil, status: .inStock(quantity: 9)), precondition: nil, origin: erin, idempotency: nil)
            let head = try await daemons[0].resolve(.now)
            let filter = FeedFilter(user: "erin", topics: [.item], items: try ItemFilter(parsing: "quantity <= 5"))
            let deadline = ContinuousClock.now + .seconds(10)
            var pages: [FeedPage] = []
            for daemon in daemons {
                // What the other daemons committed reaches this one's memory by NOTIFY: read until it is there.
                var page = try await daemon.readChanges(after: 0, filter: filter, limit: 100)
                while page.cursor.seq < head, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                    page = try await daemon.readChanges(after: 0, filter: filter, limit: 100)
                }
                pages.append(page)
            }
            let moves = pages[2].changes.map { "\($0.seq) \($0.op.rawValue) \($0.move?.rawValue ?? "-")" }
            #expect(moves == ["1 upsert -", "3 upsert in", "4 delete out"])
            #expect(pages.allSatisfy { $0.changes.map(\.json) == pages[0].changes.map(\.json) && $0.cursor.seq == head })
            // The table's answer (a page the daemon's memory cannot give: before its oldest entry) is the same.
            #expect(try await daemons[2].readLoggedChanges(after: 0, filter: filter, limit: 100).changes.map(\.json) == pages[0].changes.map(\.json))
        }
    }

    /// A CSV import of more rows than a daemon keeps in memory, applied through one daemon while
    /// another takes writes: every daemon then reads the whole log contiguous and the same, the
    /// import's rows and the other writes each once, and its memory has caught up to the head.
    @Test(.timeLimit(.minutes(10)))
    func anImportThroughOneDaemonReachesEveryDaemonWhole() async throws {
        try await withDaemons(2) { daemons, _ in
            let erin = Origin(user: "erin")
            let spool = try ItemImportSpool()
            for n in 0..<6_000 {
                try spool.append(
                    ItemImportRow(line: n + 2, id: nil, version: nil, fields: try ValidDraft(Draft(name: "Row \(n)", color: nil, status: .inStock(quantity: n)))))
            }
            try spool.finishWriting()
            async let imported = daemons[0].importItems(spool, rejectedBefore: 0, options: ItemImportOptions(), origin: erin, idempotency: nil)
            var others = 0
            for n in 0..<20 {
                _ = try await daemons[1].createItem(id: nil, draft: Draft(name: "Other \(n)", color: nil, status: .inStock(quantity: 1)), origin: erin, idempotency: nil)
                others += 1
            }
            let result = try await imported.value
            #expect(result.applied && result.inserted == 6_000)
            let head = try await daemons[1].resolve(.now)
            #expect(head == Int64(6_000 + others))
            let filter = FeedFilter(user: "erin", topics: [.item])
            for daemon in daemons {
                try await eventually("the daemon's memory reaches the head") { daemon.hub.head == head }
                var after: Int64 = 0
                var names: [String] = []
                while after < head {
                    let page = try await daemon.readChanges(after: after, filter: filter, limit: 1_000)
                    #expect(page.changes.map(\.seq) == Array((after + 1)...(after + Int64(page.changes.count))))
                    names += try page.changes.map { try JSONCoding.decoder().decode(Item.self, from: Data(try #require($0.valueJSON).utf8)).name }
                    guard let last = page.changes.last else { break }
                    after = last.seq
                }
                #expect(names.filter { $0.hasPrefix("Row ") } == (0..<6_000).map { "Row \($0)" })
                #expect(Set(names.filter { $0.hasPrefix("Other ") }).count == others)
            }
        }
    }

    /// 30 commands of one new device through three daemons at once: every one applies, none
    /// lost. Pushes read the device's row without holding it and write only at the version read
    /// (a conflict runs the command again); its first writes queue behind each other.
    @Test(.timeLimit(.minutes(10)))
    func commandsOfOneDeviceThroughEveryDaemonAtOnceAllApply() async throws {
        try await withDaemons(3) { daemons, _ in
            let erin = Origin(user: "erin")
            var items: [Item] = []
            for index in 0..<15 {
                items.append(
                    try await daemons[0].createItem(
                        id: nil, draft: Draft(name: "Item \(index)", color: nil, status: .inStock(quantity: 1)), origin: erin, idempotency: nil
                    ).value)
            }
            let pushed = items
            let failures = await withTaskGroup(of: String?.self) { group in
                for index in 0..<30 {
                    group.addTask {
                        let command: Command = index.isMultiple(of: 2)
                            ? .push(route: .item(id: pushed[index / 2].id)) : .selectTab(tab: index % 4 == 1 ? .settings : .inventory)
                        // A write that waited past the lock timeout on a busy machine is `unavailable`,
                        // applied nowhere: a client retries it, as this does.
                        var attempt = 0
                        while true {
                            attempt += 1
                            do {
                                _ = try await daemons[index % 3].runCommand(
                                    command, clientID: "fresh", origin: Origin(user: "erin", clientID: "fresh"), idempotency: nil)
                                return nil
                            } catch StoreError.unavailable where attempt < 5 {
                                continue
                            } catch {
                                return "\(error)"
                            }
                        }
                    }
                }
                return await group.reduce(into: []) { if let failure = $1 { $0.append(failure) } }
            }
            #expect(failures.isEmpty, "\(failures)")
            let navigation = try await daemons[1].navigation(clientID: "fresh", user: "erin")
            #expect(navigation.state.path.count == 15, "no push lost")
        }
    }
}
