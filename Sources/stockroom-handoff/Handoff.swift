import Foundation
import Observation
import StockroomClient

/// `stockroom-handoff`: one device of a user, in a terminal, on StockroomClient's public API only.
/// Run two, with two device names and one user's token, against a running server; start an edit on
/// one, watch it on the other, `continue` it there and save.
@main
struct Handoff {
    static let usage = """
        usage: stockroom-handoff --device NAME [--server URL] [--token TOKEN] [--queue FILE] [--transport sse|websocket|longpoll]
          --server     the server (default $STOCKROOM_URL or http://127.0.0.1:8080)
          --token      a bearer token (default $TOKEN)
          --device     this device's clientID, e.g. phone or laptop
          --queue      the offline command queue (default ./.stockroom-handoff/NAME.sqlite)
          --transport  how the feed follows the server (default sse)
        """

    @MainActor
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        func option(_ name: String) -> String? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
            defer { arguments.removeSubrange(index...(index + 1)) }
            return arguments[index + 1]
        }
        let environment = ProcessInfo.processInfo.environment
        let server = option("--server") ?? environment["STOCKROOM_URL"] ?? "http://127.0.0.1:8080"
        let token = option("--token") ?? environment["TOKEN"]
        let deviceName = option("--device")
        let queueOption = option("--queue")
        let transports: [String: FeedTransport] = ["sse": .serverSentEvents, "websocket": .webSocket, "longpoll": .longPoll()]
        let transport = transports[option("--transport") ?? "sse"]
        guard let token, let deviceName, let device = ClientID(deviceName), let url = URL(string: server), let transport, arguments.isEmpty else {
            print(usage)
            exit(2)
        }
        let queuePath = queueOption ?? ".stockroom-handoff/\(device).sqlite"
        let client = StockroomClient(baseURL: url, token: token)
        let store: SyncedStore
        do {
            var options = SyncedStore.Options()
            options.feed.transport = transport
            store = try SyncedStore(client: client, clientID: device, queuePath: queuePath, options: options)
        } catch {
            print("cannot open the queue at \(queuePath): \(error)")
            exit(1)
        }
        store.start()
        let screen = Screen(store: store)
        screen.observe()
        for await line in Terminal.lines() {
            let done = await screen.run(line.trimmingCharacters(in: .whitespaces))
            if done { break }
        }
        store.stop()
        print("")
    }
}

/// Draws the store and runs the typed commands.
@MainActor
final class Screen {
    let store: SyncedStore
    var message = "Type help for the commands."
    private var redrawScheduled = false

    init(store: SyncedStore) { self.store = store }

    /// Redraws now and whenever something the drawing read changes (coalesced).
    func observe() {
        withObservationTracking {
            draw()
        } onChange: {
            Task { @MainActor [weak self] in self?.scheduleRedraw() }
        }
    }

    private func scheduleRedraw() {
        guard !redrawScheduled else { return }
        redrawScheduled = true
        Task { @MainActor in
            try? await Task.sleep(for: .milliseconds(15))
            redrawScheduled = false
            observe()
        }
    }

    func draw() {
        var out = "\u{1B}[2J\u{1B}[H"
        out += bold("Stockroom handoff") + ": device \(bold(store.clientID.rawValue)) - \(connection)\n\n"
        out += bold("Items") + (store.filter.map { " matching \($0.text.terminalSafe)" } ?? "") + "\n"
        let items = store.items
        if items.isEmpty { out += "  (none)\n" }
        for (index, item) in items.enumerated() {
            out += String(format: "  %2d. ", index + 1) + pad(item.name.terminalSafe, 28) + " " + pad(describe(item.status), 16) + " v\(item.version)\n"
        }
        out += "\n" + bold("This device") + " (\(store.clientID)): " + describe(store.navigation.state) + "\n"
        out += "  link: \(store.navigation.state.url)"
        let checkpoints = store.navigation.state.checkpoints.keys.sorted()
        if !checkpoints.isEmpty { out += ", checkpoints: " + checkpoints.map(\.terminalSafe).joined(separator: ", ") }
        out += "\n"
        out += "\n" + bold("Other devices") + "\n"
        if store.otherDevices.isEmpty { out += "  (none yet)\n" }
        for device in store.otherDevices {
            let presence = pad(presence(of: device.clientID), 17)
            let shown = store.presence[device.clientID]?.online == true ? "\u{1B}[32m\(presence)\u{1B}[0m" : presence
            out += "  \(pad(device.clientID.rawValue, 10)) \(shown) " + describe(device.state) + "\n"
        }
        let pending: [String] = store.pendingWrites.map(\.write.name)
        out += "\n" + bold("Pending") + ": " + (pending.isEmpty ? "none" : pending.joined(separator: ", ")) + "\n"
        if let failure = store.failedWrites.last {
            out += bold("Refused") + ": \(failure.write.name): \(failure.error.code) - \(failure.error.message.terminalSafe)\n"
        }
        out += "\n\(message)\n> "
        FileHandle.standardOutput.write(Data(out.utf8))
    }

    private var connection: String {
        switch store.connection {
        case .online: "\u{1B}[32monline\u{1B}[0m"
        case .offline: "\u{1B}[31moffline\u{1B}[0m (commands wait in the queue)"
        case .failed(let error): "\u{1B}[31mfailed\u{1B}[0m: " + "\(error)".terminalSafe
        case .connecting: "connecting"
        case .idle: "idle"
        }
    }

    /// Runs one typed line; true to quit.
    func run(_ line: String) async -> Bool {
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        guard let verb = parts.first else {
            draw()
            return false
        }
        let rest = parts.count > 1 ? parts[1] : ""
        do {
            switch verb {
            case "quit", "exit":
                return true
            case "help":
                message = """
                    edit N | add | duplicate N | name TEXT | type TEXT | qty N | save | cancel
                    open N | back | delete N | confirm | press N (an alert's button) | continue DEVICE
                    mark NAME | return NAME | link URL | filter [EXPR] (e.g. quantity <= 5; none: all) | dismiss | quit
                    """
            case "edit":
                try store.send(.openEdit(itemID: try item(rest).id))
            case "duplicate":
                try store.send(.openDuplicate(itemID: try item(rest).id))
            case "add":
                try store.send(.openAdd)
            case "name":
                try requireDraft { $0.name = rest }
            case "type":
                // One updateDraft per character, as a text field sends them: the other device sees it typed.
                for character in rest {
                    try requireDraft { $0.name.append(character) }
                    try await Task.sleep(for: .milliseconds(60))
                }
            case "qty":
                guard let quantity = Int(rest) else { throw Usage("qty takes a number") }
                try requireDraft { $0.status = .inStock(quantity: quantity) }
            case "save":
                // A stale save opens the conflict alert (keep mine, take theirs, review) rather than failing.
                try store.send(.save(onConflict: .alert))
            case "press":
                guard let buttons = store.navigation.state.destination?.alert?.buttons else { throw Usage("no alert open") }
                guard let index = Int(rest), (1...buttons.count).contains(index) else { throw Usage("press takes 1-\(buttons.count)") }
                try store.send(buttons[index - 1].command)
            case "mark":
                try store.send(.setCheckpoint(name: rest))
            case "return":
                try store.send(.returnToCheckpoint(name: rest))
            case "link":
                try store.send(.openURL(url: rest))
            case "cancel":
                try store.send(.cancel)
            case "open":
                try store.send(.push(route: .item(id: try item(rest).id)))
            case "back":
                try store.send(.pop)
            case "delete":
                try store.send(.openDeleteAlert(itemID: try item(rest).id))
            case "confirm":
                try store.send(.confirmDelete)
            case "continue":
                guard let source = ClientID(rest) else { throw Usage("continue takes a device name") }
                try store.continue(from: source)
            case "dismiss":
                for failure in store.failedWrites { store.dismissFailedWrite(failure.id) }
            case "filter":
                // Follows only the matching items from now on, without a refetch.
                try await store.setFilter(rest.isEmpty ? nil : try ItemFilter(parsing: rest))
            default:
                throw Usage("unknown command \(verb); type help")
            }
            if verb != "help" { message = "> \(line)" }
        } catch {
            message = "\(error)".terminalSafe
        }
        draw()
        return false
    }

    private func item(_ number: String) throws -> Item {
        let items = store.items
        guard let index = Int(number), (1...items.count).contains(index) else { throw Usage("no item \(number)") }
        return items[index - 1]
    }

    private func requireDraft(_ change: (inout Draft) -> Void) throws {
        guard try store.editDraft(change) != nil else { throw Usage("no draft open: edit N or add first") }
    }

    private func describe(_ status: Status) -> String {
        switch status {
        case .inStock(let quantity): "in stock \(quantity)"
        case .outOfStock(let backOrdered): backOrdered ? "back-ordered" : "out of stock"
        }
    }

    private func describe(_ state: NavigationState) -> String {
        var parts = ["tab \(state.tab.rawValue)"]
        if !state.path.isEmpty {
            parts.append("path " + state.path.map { name(of: $0.itemID) }.joined(separator: " > "))
        }
        switch state.destination {
        case nil:
            parts.append("nothing open")
        case .add(let draft):
            parts.append("adding: " + describe(draft))
        case .edit(let id, let baseVersion, let draft):
            parts.append("editing \(name(of: id)) (from v\(baseVersion)): " + describe(draft))
        case .duplicate(let id, let draft):
            parts.append("duplicating \(name(of: id)): " + describe(draft))
        case .deleteAlert(_, let alert):
            parts.append("alert: " + describe(alert))
        case .conflict(_, _, let draft, let current, let alert):
            let theirs = current.map { "theirs \"\($0.name.terminalSafe)\", \(describe($0.status)) v\($0.version)" } ?? "theirs deleted"
            parts.append("alert: " + describe(alert) + "\n    mine " + describe(draft) + "; " + theirs)
        }
        return parts.joined(separator: ", ")
    }

    /// "open now", "seen 3 min ago", "never seen": what the store last heard of the device.
    private func presence(of device: ClientID) -> String {
        // Offline, what the store last heard is stale: say nothing.
        guard case .online = store.connection, let presence = store.presence[device] else { return "" }
        if presence.online { return "open now" }
        guard let seen = presence.lastSeenAt else { return "never seen" }
        let seconds = max(0, Int(Date().timeIntervalSince(seen)))
        switch seconds {
        case ..<60: return "seen just now"
        case ..<3600: return "seen \(seconds / 60) min ago"
        case ..<86_400: return "seen \(seconds / 3600) h ago"
        default: return "seen \(seconds / 86_400) days ago"
        }
    }

    private func describe(_ alert: AlertState) -> String {
        let buttons = alert.buttons.enumerated().map { "[\($0.offset + 1) \($0.element.label.text.terminalSafe)]" }.joined(separator: " ")
        return "\(alert.title.text.terminalSafe) \(buttons)"
    }

    private func describe(_ draft: Draft) -> String {
        "draft \"\(draft.name.terminalSafe)\", \(describe(draft.status))"
    }

    private func name(of id: ItemID) -> String {
        store.itemsByID[id].map { "\"\($0.name.terminalSafe)\"" } ?? "a deleted item"
    }

    private func bold(_ text: String) -> String { "\u{1B}[1m\(text)\u{1B}[0m" }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
    }
}

struct Usage: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Lines typed on standard input, read on a thread of their own.
enum Terminal {
    static func lines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
        }
    }
}
