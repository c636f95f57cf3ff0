import Foundation
import TestSupport
import Testing

@testable import StockroomServer

/// The OpenAPI document's schemas against the code: the fields of `Item`, `Draft` and `Color` are
/// those of the table every layer is tested with (`ItemFields`), and `Command` documents every
/// command. A field or command added to the code and not to the contract fails here.
@Suite("OpenAPI schemas and the code")
struct OpenAPISchemaTests {
    /// `components: schemas:` of the document: a schema's `required` list (the first object schema of that name).
    static func required(of schema: String) throws -> [String]? {
        let lines = String(decoding: try OpenAPIDocument.bytes(), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() where line == "    \(schema):" {
            for next in lines[(index + 1)...].prefix(4) where next.hasPrefix("      required: [") {
                return next.dropFirst("      required: [".count).dropLast().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            }
        }
        return nil
    }

    @Test func theItemSchemasNameEveryFieldOfTheTable() throws {
        #expect(try Self.required(of: "Item") == ItemFields.item)
        #expect(try Self.required(of: "Draft") == ItemFields.draft)
        #expect(try Self.required(of: "Color") == ItemFields.color)
    }

    @Test func theCommandSchemaDocumentsEveryCommand() throws {
        let text = String(decoding: try OpenAPIDocument.bytes(), as: UTF8.self)
        let start = try #require(text.range(of: "\n    Command:\n"))
        let end = text[start.upperBound...].range(of: "\n    [A-Za-z]+:\n", options: .regularExpression)?.lowerBound ?? text.endIndex
        let titles = text[start.upperBound..<end].split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("title: ") ? String(trimmed.dropFirst("title: ".count)) : nil
        }
        #expect(Set(titles) == Fixture.allCommandCaseNames && titles.count == Fixture.allCommandCaseNames.count)
    }
}
