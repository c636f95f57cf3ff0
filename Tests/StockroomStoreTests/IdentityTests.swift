import Foundation
import StockroomCore
import Testing

import StockroomStorage

/// One user can never act as another: identities are equal exactly when their stored bytes are,
/// in Swift as in SQL (issue #14, point 1).
@Suite("User identity")
struct IdentityTests {
    static let joseNFC = "Jos\u{E9}"
    static let joseNFD = "Jose\u{301}"
    static let kate = "Kate"
    static let kelvinKate = "\u{212A}ate"

    @Test func newNamesAreNormalizedToNFC() throws {
        #expect(try UserID(validating: Self.joseNFD).rawValue.utf8.elementsEqual(Self.joseNFC.utf8))
        #expect(try UserID(validating: Self.joseNFC) == UserID(validating: Self.joseNFD))
        #expect(try UserID(validating: Self.kelvinKate).rawValue == "Kate")
        #expect(try UserID(validating: "  alice@example.com ").rawValue == "alice@example.com")
        #expect(try UserID(validating: "李小龙").rawValue == "李小龙")
        #expect(try UserID(validating: String(repeating: "ü", count: 64)).rawValue.count == 64)
    }

    @Test(arguments: [
        "", "   ", "al\u{0}ice", "bo\u{7}b\u{1B}[31m", "tab\there", "del\u{7F}", "c1\u{85}x", "rtl\u{200F}mark",
        "over\u{202E}ride", "zero\u{200B}width", "emoji😀", "slash/", String(repeating: "a", count: 65),
        String(repeating: "\u{1D400}", count: 65),
    ])
    func namesOutsideTheRuleAreRefused(_ name: String) {
        #expect(throws: DomainError.self) { try UserID(validating: name) }
    }

    @Test func storedIdentitiesCompareByBytes() {
        #expect(UserID(stored: Self.joseNFC) != UserID(stored: Self.joseNFD))
        #expect(UserID(stored: Self.kate) != UserID(stored: Self.kelvinKate))
        #expect(Set([UserID(stored: Self.joseNFC), UserID(stored: Self.joseNFD)]).count == 2)
        #expect(UserID(stored: "alice") == UserID(stored: "alice"))
    }

    /// A database written before the rule holds both spellings: they stay two users.
    @Test(arguments: [(joseNFC, joseNFD), (kate, kelvinKate)])
    func canonicallyEquivalentOwnersAreTwoUsers(_ pair: (String, String)) async throws {
        try await withTemporaryDatabase { database in
            let owner = UserID(stored: pair.0)
            let other = UserID(stored: pair.1)
            _ = try await database.runCommand(.openAdd, clientID: "jose-phone", origin: Origin(user: owner, clientID: "jose-phone"))
            let before = try await database.navigation(clientID: "jose-phone", user: owner)

            #expect(await failure { try await database.navigation(clientID: "jose-phone", user: other) } == .notFound)
            #expect(
                await failure {
                    try await database.runCommand(.cancel, clientID: "jose-phone", origin: Origin(user: other, clientID: "jose-phone"))
                } == .notFound)
            let restored = try? await database.runCommand(
                .restore(fromClientID: "jose-phone"), clientID: "other-laptop", origin: Origin(user: other, clientID: "other-laptop")).value
            #expect(restored?.navigation.state != before.state)

            #expect(try await database.navigation(clientID: "jose-phone", user: owner) == before)
            #expect(try await database.navigations(user: owner).map(\.clientID) == ["jose-phone"])
            #expect(try await database.navigations(user: other).map(\.clientID).contains("jose-phone") == false)
        }
    }

    /// Random pairs of distinct users, drawn from look-alikes (canonical equivalents, compatibility
    /// characters, case variants), never reach each other's navigation, drafts or feed entries.
    @Test func randomPairsOfUsersNeverSeeEachOther() async throws {
        let spellings = [
            Self.joseNFC, Self.joseNFD, "jos\u{E9}", "JOS\u{C9}", Self.kate, Self.kelvinKate, "kate", "KATE",
            "\u{C5}ngstr\u{F6}m", "\u{212B}ngstr\u{F6}m", "A\u{30A}ngstro\u{308}m", "ﬁle", "file", "ｆｉｌｅ", "İstanbul", "i̇stanbul",
        ]
        var generator = SplitMix64(seed: 0x5EC0_0014)
        try await withTemporaryDatabase { database in
            let item = try await database.createItem(
                id: .random(), draft: Draft(name: "Shared", color: nil, status: .inStock(quantity: 1)), origin: Origin(user: "admin")).value
            for round in 0..<40 {
                let a = spellings[Int(generator.next() % UInt64(spellings.count))]
                var b = spellings[Int(generator.next() % UInt64(spellings.count))]
                while b.utf8.elementsEqual(a.utf8) { b = spellings[Int(generator.next() % UInt64(spellings.count))] }
                let userA = UserID(stored: a)
                let userB = UserID(stored: b)
                let clientA = ClientID("a-\(round)")!
                let clientB = ClientID("b-\(round)")!
                let start = try await database.resolve(.now)

                _ = try await database.runCommand(.openEdit(itemID: item.id), clientID: clientA, origin: Origin(user: userA, clientID: clientA))
                _ = try await database.runCommand(
                    .updateDraft(draft: Draft(name: "secret of \(round)", color: nil, status: .inStock(quantity: 2))),
                    clientID: clientA, origin: Origin(user: userA, clientID: clientA))
                let stateA = try await database.navigation(clientID: clientA, user: userA)

                // B can neither read, change nor copy A's device.
                #expect(await failure { try await database.navigation(clientID: clientA, user: userB) } == .notFound)
                for command in [Command.cancel, .save(), .selectTab(tab: .inventory), .pop] {
                    #expect(
                        await failure { try await database.runCommand(command, clientID: clientA, origin: Origin(user: userB, clientID: clientA)) }
                            == .notFound)
                }
                _ = try? await database.runCommand(
                    .restore(fromClientID: clientA), clientID: clientB, origin: Origin(user: userB, clientID: clientB))
                let stateB = try await database.navigation(clientID: clientB, user: userB)
                #expect(stateB.state.destination == nil, "\(b) copied \(a)'s draft")

                // B's feed and snapshot hold nothing of A's navigation.
                let page = try await database.readChanges(
                    after: start, filter: FeedFilter(user: userB, topics: [.navigation]), limit: 1000)
                #expect(page.changes.allSatisfy { $0.id != clientA.rawValue }, "\(b) saw \(a)'s navigation in the feed")
                #expect(try await database.snapshot(user: userB).navigation.allSatisfy { $0.clientID != clientA })
                #expect(try await database.navigations(user: userB).allSatisfy { $0.clientID != clientA })

                // A's device is untouched and still A's.
                #expect(try await database.navigation(clientID: clientA, user: userA) == stateA)
                #expect(try await database.navigations(user: userA).contains { $0.clientID == clientA })
            }
        }
    }
}
