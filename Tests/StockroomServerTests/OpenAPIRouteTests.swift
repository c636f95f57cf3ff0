import Foundation
import Testing

@testable import StockroomServer

@Suite("OpenAPI document and router")
struct OpenAPIRouteTests {
    /// `paths:` of the document: path -> methods, read from the YAML's two-space/four-space structure.
    static func documentedOperations() throws -> [String: Set<String>] {
        let text = String(decoding: try OpenAPIDocument.bytes(), as: UTF8.self)
        var operations: [String: Set<String>] = [:]
        var inPaths = false
        var current: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" { inPaths = true; continue }
            guard inPaths else { continue }
            if !line.isEmpty, !line.hasPrefix(" ") { break }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                current = String(line.dropFirst(2).dropLast())
            } else if let current, line.hasPrefix("    "), !line.hasPrefix("     ") {
                let key = line.trimmingCharacters(in: .whitespaces).dropLast()
                if ["get", "head", "put", "post", "delete", "patch"].contains(String(key)) { operations[current, default: []].insert(key.uppercased()) }
            }
        }
        return operations
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedOperationIsRouted() async throws {
        try await withTestApp { app in
            let settings = try Settings(reader: app.reader())
            let router = buildRouter(database: app.database, settings: settings, streams: FeedStreams(settings: settings.feed))
            var routed: [String: Set<String>] = [:]
            for route in router.routes {
                // Hummingbird writes captures as {name}, as OpenAPI does.
                routed["\(route.path)", default: []].insert(route.method.rawValue)
            }
            let documented = try Self.documentedOperations()
            #expect(!documented.isEmpty)
            #expect(routed == documented)
        }
    }
}
