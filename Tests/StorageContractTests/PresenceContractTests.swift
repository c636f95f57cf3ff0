import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import Testing

/// Presence on every backend: leases make a device online on any daemon, a flip is one `presence`
/// change (at most one per device per coalescing window), a dead daemon's leases expire, and
/// devices unseen past the cutoff are removed with a navigation delete. Times are passed in, so
/// nothing here waits.
@Suite("Storage contract: presence")
struct PresenceContractTests {
    static let presenceOnly = FeedFilter(user: "erin", topics: [.presence])
    static let t0 = Date(timeIntervalSince1970: 1_900_000_000)

    static func tick(
        _ daemon: String, at seconds: Double, opened: [ClientID: UserID] = [:], closed: [ClientID: UserID] = [:],
        seen: [ClientID: UserID] = [:], renew: Bool = false
    ) -> PresenceTick {
        let now = t0.addingTimeInterval(seconds)
        return PresenceTick(
            daemon: daemon, now: now, leaseUntil: now.addingTimeInterval(30),
            seen: Dictionary(uniqueKeysWithValues: seen.map { (PresenceTick.Holder($0.key, $0.value), now) }), opened: Set(opened.map { .init($0.key, $0.value) }),
            closed: Set(closed.map { .init($0.key, $0.value) }), renewLeases: renew)
    }

    static func presenceChanges(_ storage: any Storage, after seq: Int64) async throws -> [Presence] {
        try await storage.readChanges(after: seq, filter: presenceOnly, limit: 100).changes.map { entry in
            #expect(entry.entity == .presence && entry.op == .upsert && entry.owner == "erin")
            return try JSONCoding.decoder().decode(Presence.self, from: Data((entry.valueJSON ?? "").utf8))
        }
    }

    @Test(arguments: StorageBackend.all)
    func aDeviceIsOnlineWhileAnyDaemonHoldsALeaseAndEachFlipIsOneChange(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let head = try await storage.resolve(.now)
            #expect(try await storage.recordPresence(Self.tick("a", at: 0, opened: ["phone": "erin"])) == false)
            var changes = try await Self.presenceChanges(storage, after: head)
            #expect(changes == [Presence(clientID: "phone", online: true, lastSeenAt: Self.t0)])
            #expect(try await storage.presence(of: ["phone"], user: "erin", now: Self.t0)["phone"]?.online == true)
            // Another user sees nothing of it.
            #expect(try await storage.presence(of: ["phone"], user: "otto", now: Self.t0)["phone"]
                == Presence(clientID: "phone", online: false, lastSeenAt: nil))

            // Daemon b opens it too, a closes: still online, no change.
            #expect(try await storage.recordPresence(Self.tick("b", at: 2, opened: ["phone": "erin"])) == false)
            #expect(try await storage.recordPresence(Self.tick("a", at: 3, closed: ["phone": "erin"])) == false)
            #expect(try await Self.presenceChanges(storage, after: head).count == 1)

            // b closes within a second of a new flip: held back (coalescing), then published by a later tick.
            #expect(try await storage.recordPresence(Self.tick("b", at: 4, closed: ["phone": "erin"])) == false)
            changes = try await Self.presenceChanges(storage, after: head)
            #expect(changes.last == Presence(clientID: "phone", online: false, lastSeenAt: Self.t0.addingTimeInterval(2)))
            #expect(try await storage.recordPresence(Self.tick("a", at: 4.2, opened: ["phone": "erin"])) == true, "held by coalescing")
            #expect(try await Self.presenceChanges(storage, after: head).count == 2)
            #expect(try await storage.presence(of: ["phone"], user: "erin", now: Self.t0.addingTimeInterval(4.3))["phone"]?.online == true)
            #expect(try await storage.recordPresence(Self.tick("b", at: 5.5)) == false)
            changes = try await Self.presenceChanges(storage, after: head)
            #expect(changes.count == 3 && changes.last?.online == true)

            // Daemon a dies: its lease expires, and any daemon's tick publishes the device offline.
            #expect(try await storage.recordPresence(Self.tick("b", at: 40)) == false)
            changes = try await Self.presenceChanges(storage, after: head)
            #expect(changes.count == 4 && changes.last?.online == false)
            #expect(try await storage.presence(of: ["phone"], user: "erin", now: Self.t0.addingTimeInterval(40))["phone"]?.online == false)
        }
    }

    @Test(arguments: StorageBackend.all)
    func aSightingMovesLastSeenAtAndChangesNothingElse(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let head = try await storage.resolve(.now)
            try await storage.recordPresence(Self.tick("a", at: 0, seen: ["phone": "erin"]))
            try await storage.recordPresence(Self.tick("a", at: 5, seen: ["phone": "erin"]))
            // Another user's sighting of the same id does not take the device over.
            try await storage.recordPresence(Self.tick("a", at: 9, seen: ["phone": "otto"]))
            #expect(try await storage.presence(of: ["phone"], user: "erin", now: Self.t0)["phone"]
                == Presence(clientID: "phone", online: false, lastSeenAt: Self.t0.addingTimeInterval(5)))
            #expect(try await storage.resolve(.now) == head, "no change entry for a sighting")
        }
    }

    /// A device belongs to the user who wrote it: another user's sighting of it (a refused command,
    /// a feed naming it) takes nothing, and a device another user was seen with before it was
    /// written goes to its writer with the writer's next sighting, its presence then the writer's.
    /// Devices never written are tracked only up to `clientsPerUser` devices seen per user: naming
    /// fresh clientIDs on feed requests adds no rows and no presence changes past that. A device
    /// the user writes, or one already seen, is tracked whatever the count; other users have their own room.
    @Test(arguments: StorageBackend.all)
    func devicesNeverWrittenAreTrackedUpToTheClientCap(backend: StorageBackend) async throws {
        try await withStorage(backend, limits: StoreLimits(clientsPerUser: 3)) { storage in
            let head = try await storage.resolve(.now)
            let fresh: [ClientID] = ["d1", "d2", "d3", "d4", "d5"]
            try await storage.recordPresence(Self.tick("a", at: 0, opened: Dictionary(uniqueKeysWithValues: fresh.map { ($0, "erin") })))
            let seen = try await storage.presence(of: fresh, user: "erin", now: Self.t0.addingTimeInterval(1))
            #expect(fresh.filter { seen[$0]?.lastSeenAt != nil } == ["d1", "d2", "d3"], "the first three, in client_id order")
            #expect(try await Self.presenceChanges(storage, after: head).map(\.clientID) == ["d1", "d2", "d3"])
            // Once past the cap, one more fresh name in a later tick is not tracked either.
            try await storage.recordPresence(Self.tick("a", at: 2, seen: ["d6": "erin", "d1": "erin"]))
            let later = try await storage.presence(of: ["d1", "d6"], user: "erin", now: Self.t0.addingTimeInterval(3))
            #expect(later["d1"]?.lastSeenAt == Self.t0.addingTimeInterval(2) && later["d6"]?.lastSeenAt == nil)
            // A written device is tracked past the cap.
            _ = try await storage.runCommand(.openAdd, clientID: "phone", origin: Origin(user: "erin", clientID: "phone"), idempotency: nil)
            try await storage.recordPresence(Self.tick("a", at: 4, seen: ["phone": "erin"]))
            #expect(try await storage.presence(of: ["phone"], user: "erin", now: Self.t0.addingTimeInterval(5))["phone"]?.lastSeenAt
                == Self.t0.addingTimeInterval(4))
            // Another user's room is their own.
            try await storage.recordPresence(Self.tick("a", at: 6, seen: ["o1": "otto", "o2": "otto"]))
            #expect(try await storage.presence(of: ["o1", "o2"], user: "otto", now: Self.t0.addingTimeInterval(7)).values.allSatisfy {
                $0.lastSeenAt == Self.t0.addingTimeInterval(6)
            })
            // A new device sighted with two users in one tick is the first's (in user order; Ada has
            // room), and takes nothing of the other's room: Otto's last place goes to his own device.
            try await storage.recordPresence(Self.tick("a", at: 8, opened: ["a-shared": "otto"], seen: ["a-shared": "ada", "o3": "otto"]))
            let ottos = try await storage.presence(of: ["a-shared", "o3"], user: "otto", now: Self.t0.addingTimeInterval(9))
            #expect(ottos["a-shared"]?.lastSeenAt == nil && ottos["o3"]?.lastSeenAt == Self.t0.addingTimeInterval(8), "\(ottos)")
            #expect(try await storage.presence(of: ["a-shared"], user: "ada", now: Self.t0.addingTimeInterval(9))["a-shared"]?.lastSeenAt
                == Self.t0.addingTimeInterval(8))
        }
    }

    @Test(arguments: StorageBackend.all)
    func aWrittenDeviceIsItsWritersWhoeverWasSeenWithIt(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            // Otto's feed named "phone" before anyone wrote it; erin then wrote both devices.
            try await storage.recordPresence(Self.tick("a", at: 0, opened: ["phone": "otto"]))
            try await storage.recordPresence(Self.tick("a", at: 1, closed: ["phone": "otto"]))
            for device: ClientID in ["phone", "tablet"] {
                _ = try await storage.runCommand(.openAdd, clientID: device, origin: Origin(user: "erin", clientID: device), idempotency: nil)
            }
            let head = try await storage.resolve(.now)
            // Otto's sightings of erin's devices take nothing.
            try await storage.recordPresence(Self.tick("a", at: 2, seen: ["tablet": "otto", "phone": "otto"]))
            try await storage.recordPresence(Self.tick("a", at: 3, seen: ["tablet": "erin", "phone": "erin"]))
            try await storage.recordPresence(Self.tick("a", at: 4, seen: ["tablet": "otto", "phone": "otto"]))
            let erins = try await storage.presence(of: ["phone", "tablet"], user: "erin", now: Self.t0.addingTimeInterval(5))
            #expect(erins["phone"] == Presence(clientID: "phone", online: false, lastSeenAt: Self.t0.addingTimeInterval(3)))
            #expect(erins["tablet"] == Presence(clientID: "tablet", online: false, lastSeenAt: Self.t0.addingTimeInterval(3)))
            let ottos = try await storage.presence(of: ["phone", "tablet"], user: "otto", now: Self.t0.addingTimeInterval(5))
            #expect(ottos.values.allSatisfy { $0.lastSeenAt == nil && !$0.online })
            // Otto's feed naming it again takes nothing either; erin's own makes it online, to her.
            try await storage.recordPresence(Self.tick("a", at: 5, opened: ["phone": "otto"]))
            try await storage.recordPresence(Self.tick("a", at: 5.5, closed: ["phone": "otto"]))
            #expect(try await storage.presence(of: ["phone"], user: "erin", now: Self.t0.addingTimeInterval(6))["phone"]?.lastSeenAt
                == Self.t0.addingTimeInterval(3))
            try await storage.recordPresence(Self.tick("b", at: 7, opened: ["phone": "erin"]))
            #expect(try await Self.presenceChanges(storage, after: head)
                == [Presence(clientID: "phone", online: true, lastSeenAt: Self.t0.addingTimeInterval(7))])
        }
    }

    /// A lease is its holder's: a device is online only while a feed of its own user's is open.
    /// Another user's feed naming the same id, before or after the device was written, makes it
    /// online to no one, and on the same daemon neither takes the owner's lease nor gives it up.
    @Test(arguments: StorageBackend.all)
    func anotherUsersFeedOfADeviceDoesNotMakeItOnline(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let head = try await storage.resolve(.now)
            // Erin was seen with "watch", never written; Otto's feed names it and stays open.
            try await storage.recordPresence(Self.tick("a", at: 0, seen: ["watch": "erin"]))
            try await storage.recordPresence(Self.tick("b", at: 1, opened: ["watch": "otto"]))
            #expect(try await storage.presence(of: ["watch"], user: "erin", now: Self.t0.addingTimeInterval(2))["watch"]
                == Presence(clientID: "watch", online: false, lastSeenAt: Self.t0))
            // Otto's feed names "phone" first and stays open; erin then writes it and is seen with it.
            try await storage.recordPresence(Self.tick("b", at: 2, opened: ["phone": "otto"]))
            _ = try await storage.runCommand(.openAdd, clientID: "phone", origin: Origin(user: "erin", clientID: "phone"), idempotency: nil)
            try await storage.recordPresence(Self.tick("a", at: 3, seen: ["phone": "erin"]))
            #expect(try await storage.presence(of: ["phone"], user: "erin", now: Self.t0.addingTimeInterval(4))["phone"]
                == Presence(clientID: "phone", online: false, lastSeenAt: Self.t0.addingTimeInterval(3)))
            // Her own feed makes it online; once hers closes it is offline, Otto's still open.
            try await storage.recordPresence(Self.tick("a", at: 5, opened: ["phone": "erin"]))
            #expect(try await storage.presence(of: ["phone"], user: "erin", now: Self.t0.addingTimeInterval(6))["phone"]?.online == true)
            try await storage.recordPresence(Self.tick("a", at: 7, closed: ["phone": "erin"]))
            #expect(try await storage.presence(of: ["phone"], user: "erin", now: Self.t0.addingTimeInterval(8))["phone"]?.online == false)
            // Her feed on the daemon where Otto's is open: each holds a lease of its own there, and
            // his closing leaves hers.
            try await storage.recordPresence(Self.tick("b", at: 9, opened: ["phone": "erin"]))
            try await storage.recordPresence(Self.tick("b", at: 11, closed: ["phone": "otto"]))
            #expect(try await storage.presence(of: ["phone"], user: "erin", now: Self.t0.addingTimeInterval(12))["phone"]?.online == true)
            #expect(try await Self.presenceChanges(storage, after: head) == [
                Presence(clientID: "phone", online: true, lastSeenAt: Self.t0.addingTimeInterval(5)),
                Presence(clientID: "phone", online: false, lastSeenAt: Self.t0.addingTimeInterval(5)),
                Presence(clientID: "phone", online: true, lastSeenAt: Self.t0.addingTimeInterval(9)),
            ])
        }
    }

    /// One tick may carry several users' sightings and feeds of one device (a daemon tracks each
    /// user's requests apart): the owner's count, another user's take nothing, and a device never
    /// written goes to the first of them in user order.
    @Test(arguments: StorageBackend.all)
    func severalUsersOfOneDeviceInOneTick(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            _ = try await storage.runCommand(.openAdd, clientID: "phone", origin: Origin(user: "erin", clientID: "phone"), idempotency: nil)
            let now = Self.t0.addingTimeInterval(3)
            try await storage.recordPresence(PresenceTick(
                daemon: "a", now: now, leaseUntil: now.addingTimeInterval(30),
                seen: [.init("phone", "otto"): now.addingTimeInterval(0.5), .init("phone", "erin"): now, .init("tablet", "otto"): now,
                       .init("tablet", "erin"): now],
                opened: [.init("phone", "otto"), .init("phone", "erin")]))
            let erins = try await storage.presence(of: ["phone", "tablet"], user: "erin", now: now.addingTimeInterval(1))
            #expect(erins["phone"] == Presence(clientID: "phone", online: true, lastSeenAt: now))
            #expect(erins["tablet"] == Presence(clientID: "tablet", online: false, lastSeenAt: now))
            let ottos = try await storage.presence(of: ["phone", "tablet"], user: "otto", now: now.addingTimeInterval(1))
            #expect(ottos.values.allSatisfy { $0.lastSeenAt == nil && !$0.online })
        }
    }

    /// Several devices in one call (the navigation list): each answered for itself, another user's
    /// and a never-seen device as never seen.
    @Test(arguments: StorageBackend.all)
    func presenceOfSeveralDevicesAnswersEachForItself(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            try await storage.recordPresence(Self.tick("a", at: 0, opened: ["phone": "erin"], seen: ["tablet": "erin", "desk": "otto"]))
            try await storage.recordPresence(Self.tick("a", at: 3, seen: ["phone": "erin"]))
            let presence = try await storage.presence(of: ["phone", "tablet", "watch", "desk"], user: "erin", now: Self.t0.addingTimeInterval(5))
            #expect(presence.count == 4)
            #expect(presence["phone"] == Presence(clientID: "phone", online: true, lastSeenAt: Self.t0.addingTimeInterval(3)))
            #expect(presence["tablet"] == Presence(clientID: "tablet", online: false, lastSeenAt: Self.t0))
            #expect(presence["watch"] == Presence(clientID: "watch", online: false, lastSeenAt: nil))
            #expect(presence["desk"] == Presence(clientID: "desk", online: false, lastSeenAt: nil))
            #expect(try await storage.presence(of: [], user: "erin", now: Self.t0).isEmpty)
        }
    }

    @Test(arguments: StorageBackend.all)
    func devicesUnseenSinceTheCutoffAreRemovedWithANavigationDelete(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            // Otto's feeds named the phone before erin wrote it, and a watch no one wrote: his leases
            // keep neither (the phone is erin's; the watch, seen first with erin, too).
            let now = Date()
            try await storage.recordPresence(
                PresenceTick(daemon: "a", now: now, leaseUntil: now.addingTimeInterval(3_600), opened: [.init("phone", "otto")]))
            for device: ClientID in ["phone", "tablet"] {
                _ = try await storage.runCommand(
                    .openAdd, clientID: device, origin: Origin(user: "erin", clientID: device), idempotency: nil)
            }
            try await storage.recordPresence(
                PresenceTick(daemon: "a", now: now, leaseUntil: now.addingTimeInterval(3_600), seen: [.init("watch", "erin"): now]))
            try await storage.recordPresence(
                PresenceTick(daemon: "b", now: now, leaseUntil: now.addingTimeInterval(3_600), opened: [.init("watch", "otto")]))
            // The tablet's feed is open now: it stays. Its lease is an hour long: the store compares
            // it with the clock, and on a loaded machine this test has taken two minutes.
            try await storage.recordPresence(
                PresenceTick(daemon: "a", now: now, leaseUntil: now.addingTimeInterval(3_600), opened: [.init("tablet", "erin")]))
            let head = try await storage.resolve(.now)
            #expect(try await storage.removeStaleDevices(notSeenSince: now.addingTimeInterval(60), limit: 10) == 1)
            #expect(try await storage.presence(of: ["watch"], user: "erin", now: now)["watch"]?.lastSeenAt == nil, "the watch's row went")
            let log = try await storage.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.navigation]), limit: 10).changes
            #expect(log.map(\.entity) == [.navigation] && log.map(\.op) == [.delete] && log.map(\.id) == ["phone"])
            #expect(try await storage.navigation(clientID: "phone", user: "erin") == .unwritten(clientID: "phone"), "its draft went with it")
            #expect(try await storage.navigations(user: "erin").map(\.clientID) == ["tablet"])
            #expect(try await storage.removeStaleDevices(notSeenSince: now.addingTimeInterval(60), limit: 10) == 0)
        }
    }
}
