import Foundation

/// The SQL migration files shipped with Stockroom, in the order they must be applied: SQLite's and PostgreSQL's.
public enum MigrationFiles {
    /// Each migration's identifier (the file name without `.sql`) and its SQL text, sorted by name.
    public static func all() throws -> [(identifier: String, sql: String)] {
        try files(in: "sql")
    }

    /// PostgreSQL's migrations (`postgres/`), as `all()` gives SQLite's.
    public static func postgres() throws -> [(identifier: String, sql: String)] {
        try files(in: "postgres")
    }

    private static func files(in folder: String) throws -> [(identifier: String, sql: String)] {
        guard let directory = Bundle.module.url(forResource: folder, withExtension: nil) else {
            throw CocoaError(.fileNoSuchFile)
        }
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        return try files.map { url in
            (url.deletingPathExtension().lastPathComponent, try String(contentsOf: url, encoding: .utf8))
        }
    }
}
