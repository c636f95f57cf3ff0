import Foundation

/// The OpenAPI 3.2 document shipped with the server.
public enum OpenAPIDocument {
    /// The document's bytes, read from the resource bundle.
    public static func bytes() throws -> [UInt8] {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml", subdirectory: "Resources") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return [UInt8](try Data(contentsOf: url))
    }
}
