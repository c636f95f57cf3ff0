import GRDB

/// An SQL savepoint whose statements are prepared once per connection: GRDB's `inSavepoint` parses
/// and prepares `SAVEPOINT` and `RELEASE` on every call. GRDB recognizes these as savepoint
/// statements all the same, so its transaction observers (the change observer among them) follow
/// a rollback to one.
struct CachedSavepoint {
    private let begin: String
    private let rollBack: String
    private let end: String

    init(_ name: String) {
        begin = "SAVEPOINT \(name)"
        rollBack = "ROLLBACK TO SAVEPOINT \(name)"
        end = "RELEASE SAVEPOINT \(name)"
    }

    func open(_ db: Database) throws {
        try db.cachedStatement(sql: begin).execute()
    }

    /// Keeps what was done since `open`.
    func release(_ db: Database) throws {
        try db.cachedStatement(sql: end).execute()
    }

    /// Undoes what was done since `open`, after a failure, unless SQLite ended the whole
    /// transaction (a full disk, an I/O error) and with it the savepoint.
    func abandon(_ db: Database) throws {
        guard db.isInsideTransaction else { return }
        try db.cachedStatement(sql: rollBack).execute()
        try db.cachedStatement(sql: end).execute()
    }
}
