import Foundation        // URL
import Observation       // withObservationTracking
import StockroomClient
import Testing

// The README's example ("Use it from a Swift app"), verbatim: the test below checks that every line
// of the README's code block is here, and runs it against a live server.
@MainActor
func handOff(server: URL, token: String, folder: String) async throws -> (String?, Bool) {
    let client = StockroomClient(baseURL: server, token: token)
    let phone = try SyncedStore(client: client, clientID: "phone", queuePath: folder + "/phone.sqlite")
    phone.start()                                       // a snapshot, then the live feed
    await phone.waitUntilLoaded()                       // or observe phone.isLoaded
    withObservationTracking { _ = phone.items } onChange: { print("items changed") }  // or a SwiftUI view

    let keyboard = try await client.allItems()[0]
    try phone.send(.openEdit(itemID: keyboard.id))      // applied at once, sent in the background
    try phone.editDraft { $0.name = "Keyboard (US)" }   // typing: one updateDraft per change
    await phone.waitUntilDelivered()

    // The laptop, another device of the same user, continues where the phone is, draft included.
    let laptop = try SyncedStore(client: client, clientID: "laptop", queuePath: folder + "/laptop.sqlite")
    laptop.start()
    try laptop.continue(from: "phone")
    let saved = try await laptop.perform(.save())         // the server's answer, or a StockroomError
    phone.stop()
    laptop.stop()
    return (saved.item?.name, laptop.navigation.state.destination == nil)
}

@Suite("The README's example", .timeLimit(.minutes(10)))
@MainActor
struct ReadmeExampleTests {
    @Test func theREADMEExampleIsThisCodeAndRuns() async throws {
        let here = URL(fileURLWithPath: #filePath)
        let source = try String(contentsOf: here, encoding: .utf8)
        let readme = try String(
            contentsOf: here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "## Use it from a Swift app"))
        let start = try #require(readme.range(of: "```swift\nimport Foundation", range: section.upperBound..<readme.endIndex))
        let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        let lines = readme[readme.index(start.lowerBound, offsetBy: 9)..<end.lowerBound].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.count >= 15 && lines.contains("import StockroomClient"), "\(lines)")
        for line in lines where !line.isEmpty {
            #expect(source.contains(line), "README line not in the tested example: \(line)")
        }

        try await withServer { server in
            _ = try await server.client().createItem(.named("Keyboard", quantity: 100))
            let (name, closed) = try await handOff(server: try server.url, token: server.editor, folder: server.clientFile("example"))
            #expect(name == "Keyboard (US)")
            #expect(closed)
        }
    }
}
