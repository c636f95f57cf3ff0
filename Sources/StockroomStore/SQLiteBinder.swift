import Foundation
import GRDB

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// A statement's parameters bound in order straight through SQLite's C API (`Statement.execute(binding:)`).
struct SQLiteBinder {
    let statement: SQLiteStatement
    /// Parameters bound so far.
    private(set) var count: Int32 = 0

    /// SQLite copies the value during the call.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    mutating func bind(_ value: Int64?) {
        count += 1
        if let value { sqlite3_bind_int64(statement, count, value) } else { sqlite3_bind_null(statement, count) }
    }

    mutating func bind(_ value: Int?) {
        bind(value.map(Int64.init))
    }

    /// As GRDB stores a `Bool`: 1 or 0.
    mutating func bind(_ value: Bool?) {
        bind(value.map { $0 ? Int64(1) : 0 })
    }

    mutating func bind(_ value: Double?) {
        count += 1
        if let value { sqlite3_bind_double(statement, count, value) } else { sqlite3_bind_null(statement, count) }
    }

    mutating func bind(_ value: String?) {
        guard var value else { return bind(text: Optional<[UInt8]>.none) }
        count += 1
        let index = count
        value.withUTF8 { bytes in Self.bindText(statement, index, bytes) }
    }

    /// UTF-8 bytes as text.
    mutating func bind(text value: [UInt8]?) {
        count += 1
        guard let value else {
            sqlite3_bind_null(statement, count)
            return
        }
        let index = count
        value.withUnsafeBufferPointer { bytes in Self.bindText(statement, index, bytes) }
    }

    /// An identifier as its stored text.
    mutating func bind(_ value: (some StoredAsText)?) {
        bind(value?.rawValue)
    }

    /// An enum as its raw text, as GRDB stores a `RawRepresentable` of `String`.
    mutating func bind<Value: RawRepresentable>(_ value: Value?) where Value.RawValue == String {
        bind(value?.rawValue)
    }

    private static func bindText(_ statement: SQLiteStatement, _ index: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        // An empty buffer may have no address, and a null pointer would bind NULL, not "".
        let empty: StaticString = ""
        let start = bytes.baseAddress.map(UnsafeRawPointer.init) ?? UnsafeRawPointer(empty.utf8Start)
        sqlite3_bind_text(statement, index, start.assumingMemoryBound(to: CChar.self), Int32(bytes.count), transient)
    }
}
