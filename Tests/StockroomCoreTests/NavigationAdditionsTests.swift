import Foundation
import Testing
@testable import StockroomCore
import TestSupport

@Suite("Deep links")
struct DeepLinkTests {
    static let k = Fixture.keyboardID
    static let m = Fixture.mouseID

    /// Every kind of destination (and none), on the root and under a path, on both tabs.
    static var states: [NavigationState] {
        let destinations: [Destination?] = [
            nil,
            .add(draft: .blank),
            .edit(itemID: k, baseVersion: 1, draft: Fixture.typed),
            .duplicate(itemID: k, draft: Fixture.typed),
            .deleteAlert(for: Fixture.keyboard),
            .conflict(itemID: k, baseVersion: 0, draft: Fixture.typed, current: Fixture.keyboard),
        ]
        let paths: [[Route]] = [[], [.item(id: m)], [.item(id: m), .item(id: k)]]
        return Tab.allCases.flatMap { tab in
            paths.flatMap { path in destinations.map { NavigationState(tab: tab, path: path, destination: $0) } }
        }
    }

    @Test("format then parse gives the link back, for every destination")
    func roundTrip() throws {
        for state in Self.states {
            let link = DeepLink(state)
            #expect(try DeepLink(parsing: link.description) == link, "\(link)")
            #expect(try DeepLink(parsing: state.url) == link)
        }
    }

    @Test("opening a state's URL gives the same tab, path and kind of destination")
    func openingTheURLGivesTheSameScreen() throws {
        for state in Self.states {
            let opened = try Transition.decide(.openURL(url: state.url), on: .root, items: Fixture.live).state
            #expect(opened.tab == state.tab && opened.path == state.path)
            #expect(DeepLink(opened) == DeepLink(state), "\(state.url)")
        }
    }

    @Test("canonical forms", arguments: [
        (NavigationState(), "stockroom://inventory"),
        (NavigationState(tab: .settings), "stockroom://settings"),
        (NavigationState(path: [.item(id: k)], destination: .edit(itemID: k, baseVersion: 1, draft: .blank)),
         "stockroom://inventory/items/\(k)/edit"),
        (NavigationState(path: [.item(id: m)], destination: .duplicate(itemID: k, draft: .blank)),
         "stockroom://inventory/items/\(m)/duplicate/\(k)"),
        (NavigationState(destination: .deleteAlert(for: Fixture.keyboard)), "stockroom://inventory/delete/\(k)"),
        (NavigationState(path: [.item(id: k)], destination: .add(draft: .blank)), "stockroom://inventory/items/\(k)/new"),
    ])
    func canonical(_ state: NavigationState, _ url: String) {
        #expect(state.url == url)
    }

    @Test("a malformed link is validationFailed on url, naming the part", arguments: [
        ("http://inventory", "url must start with stockroom://"),
        ("stockroom://", "tab \"\" is not one of inventory, settings"),
        ("stockroom://orders/items/x", "tab \"orders\""),
        ("stockroom://inventory/items", "segment 2 (after /items) is missing: an item id"),
        ("stockroom://inventory/items/42", "segment 3, \"42\", is not an item id"),
        ("stockroom://inventory/item/\(k)", "segment 2, \"item\", is not one of"),
        ("stockroom://inventory/edit", "segment 2, \"edit\", needs an item"),
        ("stockroom://inventory/new/items/\(k)", "segment 3, \"items\", follows an action"),
        ("stockroom://inventory/items/\(k)/edit/delete", "segment 5, \"delete\", is not an item id"),
        ("stockroom://inventory/new/edit/\(k)", "segment 3, \"edit\", follows another action"),
        ("stockroom://inventory/", "segment 2, \"\", is not one of"),
        ("stockroom://inventory?tab=settings", "after its path"),
        ("stockroom://inventory/items/\(k)/\u{1B}[31m", "\\u{1B}"),
    ])
    func malformed(_ url: String, _ part: String) {
        do {
            _ = try DeepLink(parsing: url)
            Issue.record("\(url) parsed")
        } catch {
            guard case .validationFailed("url", let message) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(message.contains(part), "\(message)")
            #expect(!message.contains("\u{1B}"))
        }
    }

    @Test("more items than a path may hold, or a link longer than the limit, is refused")
    func limits() {
        let deep = "stockroom://inventory" + String(repeating: "/items/\(Self.k)", count: NavigationState.maxPathDepth + 1)
        #expect(throws: DomainError.self) { try DeepLink(parsing: deep) }
        let full = "stockroom://inventory" + String(repeating: "/items/\(Self.k)", count: NavigationState.maxPathDepth) + "/edit"
        #expect((try? DeepLink(parsing: full))?.path.count == NavigationState.maxPathDepth)
    }
}

@Suite("Checkpoints")
struct CheckpointTests {
    @Test("return pops to the checkpoint's depth, closes the destination, keeps the value; popping above removes it")
    func returnToCheckpoint() throws {
        var state = NavigationState(path: [Fixture.mouseRoute])
        state = try Transition.decide(.setCheckpoint(name: "list"), on: state, items: [:]).state
        #expect(state.checkpoints == ["list": Checkpoint(depth: 1)])
        state.path.append(Fixture.keyboardRoute)
        state.destination = .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.typed)
        let back = try Transition.decide(.returnToCheckpoint(name: "list", value: .number(3)), on: state, items: [:])
        #expect(back == Transition(state: NavigationState(
            path: [Fixture.mouseRoute], checkpoints: ["list": Checkpoint(depth: 1, value: .number(3))])))
        let popped = try Transition.decide(.pop, on: back.state, items: [:]).state
        #expect(popped.checkpoints.isEmpty)
        let root = try Transition.decide(.setCheckpoint(name: "root"), on: popped, items: [:]).state
        #expect(try Transition.decide(.popToRoot, on: root, items: [:]).state.checkpoints == ["root": Checkpoint(depth: 0)])
    }

    @Test("at most Checkpoint.maxCount; setting a name again moves it")
    func count() throws {
        var state = NavigationState()
        for index in 0..<Checkpoint.maxCount {
            state = try Transition.decide(.setCheckpoint(name: "c\(index)"), on: state, items: [:]).state
        }
        #expect(throws: DomainError.self) { try Transition.decide(.setCheckpoint(name: "one more"), on: state, items: [:]) }
        state.path = [Fixture.mouseRoute]
        state = try Transition.decide(.setCheckpoint(name: "c0"), on: state, items: [:]).state
        #expect(state.checkpoints["c0"] == Checkpoint(depth: 1))
    }

    @Test("a stored state with a checkpoint deeper than its path, or too many, fails checkSize")
    func checkSize() {
        #expect(throws: DomainError.self) { try NavigationState(checkpoints: ["x": Checkpoint(depth: 1)]).checkSize() }
        // A bad name in a whole state names the state's field, as the other checks of it do.
        let refused = #expect(throws: DomainError.self) { try NavigationState(checkpoints: ["": Checkpoint(depth: 0)]).checkSize() }
        if case .validationFailed(let field, _)? = refused { #expect(field == "checkpoints") } else { Issue.record("\(String(describing: refused))") }
        let control = #expect(throws: DomainError.self) { try NavigationState(checkpoints: ["a\u{7}": Checkpoint(depth: 0)]).checkSize() }
        if case .validationFailed(let field, _)? = control { #expect(field == "checkpoints") } else { Issue.record("\(String(describing: control))") }
        let big = JSONValue.array(Array(repeating: .string(String(repeating: "x", count: 100)), count: 100))
        #expect(throws: DomainError.self) { try NavigationState(checkpoints: ["x": Checkpoint(depth: 0, value: big)]).checkSize() }
        #expect(throws: Never.self) { try NavigationState(checkpoints: ["x": Checkpoint(depth: 0, value: .string("ok"))]).checkSize() }
    }
}

/// The property the issue asks of every command sequence: one destination at most, and a draft's
/// text is never lost but by a command that says so.
@Suite("Navigation properties")
struct NavigationPropertyTests {
    /// SplitMix64: the same sequences on every run.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Steps: a command of this device, or another device changing or deleting an item.
    enum Step {
        case command(Command)
        case changedElsewhere(ItemID)
        case deletedElsewhere(ItemID)
    }

    static func randomStep(_ rng: inout Seeded, ids: [ItemID], state: NavigationState) -> Step {
        let id = ids.randomElement(using: &rng)!
        let typed = Draft(name: "typed \(rng.next() % 1000)", color: nil, status: .inStock(quantity: Int(rng.next() % 5)))
        let commands: [Command] = [
            .selectTab(tab: .settings), .push(route: .item(id: id)), .pop, .popToRoot, .openAdd, .openEdit(itemID: id),
            .openDuplicate(itemID: id), .openDeleteAlert(itemID: id), .updateDraft(draft: typed), .updateDraft(draft: typed),
            .save(), .save(onConflict: .alert), .save(onConflict: .alert), .cancel, .confirmDelete,
            .resolveConflict(keep: .mine), .resolveConflict(keep: .theirs), .resolveConflict(keep: .review),
            .setCheckpoint(name: "a"), .returnToCheckpoint(name: "a", value: .bool(true)),
            .openURL(url: "stockroom://inventory/items/\(id)/edit"),
        ] + (state.destination?.alert?.commands ?? [])
        switch rng.next() % 10 {
        case 0: return .changedElsewhere(id)
        case 1 where rng.next() % 4 == 0: return .deletedElsewhere(id)
        default: return .command(commands.randomElement(using: &rng)!)
        }
    }

    @Test("no command sequence leaves two destinations open or loses a draft's text without a command that discards it")
    func draftsAreNeverLostSilently() throws {
        var rng = Seeded(state: 29)
        var alertsSeen = 0
        var conflictsSeen = 0
        for _ in 0..<300 {
            var live = Fixture.live
            var state = NavigationState.root
            for _ in 0..<60 {
                let before = state
                switch Self.randomStep(&rng, ids: Array(live.keys) + [Fixture.missingID], state: state) {
                case .changedElsewhere(let id):
                    live[id]?.version += 1
                    live[id]?.name += "'"
                case .deletedElsewhere(let id):
                    guard live.removeValue(forKey: id) != nil else { continue }
                    state = state.repaired(afterDeleting: id)
                    // A repair never drops a draft.
                    #expect(state.destination?.draft == before.destination?.draft)
                case .command(let command):
                    let items = live.filter { command.itemsToLookUp(in: state).contains($0.key) }
                    guard let transition = try? Transition.decide(command, on: state, items: items) else {
                        continue  // refused: nothing changes
                    }
                    state = transition.state
                    switch transition.effect {
                    case .none: break
                    case .insert(let fields):
                        let id = ItemID.random()
                        live[id] = Item(id: id, name: fields.name, color: fields.color, status: fields.status, version: 1, createdAt: Fixture.t0, updatedAt: Fixture.t0)
                    case .update(let id, let fields, let expected):
                        #expect(live[id]?.version == expected)
                        live[id]?.version += 1
                        live[id]?.name = fields.name
                    case .delete(let id):
                        live.removeValue(forKey: id)
                    }
                    if let draft = before.destination?.draft, state.destination?.draft != draft {
                        // The draft changed or went: only by a command that types, writes it, or discards it by name.
                        let written: Bool =
                            switch transition.effect {
                            case .insert(let fields), .update(_, let fields, _): fields == (try? ValidDraft(draft))
                            default: false
                            }
                        let discards: Bool =
                            switch command {
                            case .updateDraft, .cancel, .resolveConflict(keep: .theirs), .returnToCheckpoint: true
                            case _ where command.opensDestination: true
                            default: false
                            }
                        #expect(written || discards, "\(command.name) lost the draft \(draft.name)")
                    }
                }
                if state.destination?.alert != nil { alertsSeen += 1 }
                if case .conflict = state.destination { conflictsSeen += 1 }
                // At most one destination, on the wire too: the object has one key.
                if let destination = state.destination {
                    let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(destination)) as? [String: Any]
                    #expect(json?.count == 1)
                }
                #expect(throws: Never.self) { try state.checkSize() }
            }
        }
        // The sequences reached the states the property is about.
        #expect(alertsSeen > 100 && conflictsSeen > 20)
    }

    @Test("referencedItemIDs names each item of the path and the destination once, in order of first mention")
    func referencedItemIDsInOrderOfFirstMention() {
        let ids = (1...3).map { ItemID("00000000-0000-4000-8000-00000000000\($0)")! }
        let draft = Draft(name: "x", color: nil, status: .inStock(quantity: 1))
        #expect(NavigationState().referencedItemIDs == [])
        #expect(NavigationState(destination: .add(draft: draft)).referencedItemIDs == [])
        let path: [Route] = [.item(id: ids[2]), .item(id: ids[0]), .item(id: ids[2]), .item(id: ids[1]), .item(id: ids[0])]
        #expect(NavigationState(path: path).referencedItemIDs == [ids[2], ids[0], ids[1]])
        let editing = NavigationState(path: [.item(id: ids[1])], destination: .edit(itemID: ids[1], baseVersion: 1, draft: draft))
        #expect(editing.referencedItemIDs == [ids[1]])
        let duplicating = NavigationState(path: [.item(id: ids[1])], destination: .duplicate(itemID: ids[0], draft: draft))
        #expect(duplicating.referencedItemIDs == [ids[1], ids[0]])
    }

    /// A store keeps `repairableItemIDs` as a device's references, and a delete repairs only the
    /// devices that hold the item there: so an item is one exactly when its delete changes the state.
    @Test("repairableItemIDs holds an item exactly when deleting it changes the state")
    func repairableItemIDsAreWhatARepairChanges() {
        let ids = (1...3).map { ItemID("00000000-0000-4000-8000-00000000000\($0)")! }
        let draft = Draft(name: "x", color: nil, status: .inStock(quantity: 1))
        let item = Item(id: ids[0], name: "x", color: nil, status: .inStock(quantity: 1), version: 2, createdAt: .now, updatedAt: .now)
        let destinations: [Destination?] = [
            nil, .add(draft: draft), .edit(itemID: ids[0], baseVersion: 1, draft: draft), .duplicate(itemID: ids[0], draft: draft),
            .deleteAlert(itemID: ids[0], alert: .deleteItem(name: "x")),
            .conflict(itemID: ids[0], baseVersion: 1, draft: draft, current: item),
            .conflict(itemID: ids[0], baseVersion: 1, draft: draft, current: nil),
        ]
        let paths: [[Route]] = [[], [.item(id: ids[0])], [.item(id: ids[1]), .item(id: ids[0]), .item(id: ids[1])], [.item(id: ids[2])]]
        for path in paths {
            for destination in destinations {
                let state = NavigationState(path: path, destination: destination, checkpoints: ["top": Checkpoint(depth: path.count)])
                for id in ids {
                    #expect(state.repairableItemIDs.contains(id) == (state.repaired(afterDeleting: id) != state), "\(state), \(id)")
                }
                #expect(Set(state.repairableItemIDs).isSubset(of: Set(state.referencedItemIDs)))
                #expect(Set(state.repairableItemIDs).count == state.repairableItemIDs.count)
            }
        }
    }
}
