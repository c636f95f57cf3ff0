import Foundation
import GRDB
import StockroomCore
import Testing

@testable import StockroomStore

/// `Statement.execute(binding:)` stores what GRDB's `execute(arguments:)` stores for the same values.
@Suite struct SQLiteBinderTests {
    @Test func boundValuesAreStoredAsGRDBStoresThem() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (k INTEGER PRIMARY KEY, a, b, c, d, e, f, g, h, i)")
            let sql = "INSERT INTO t (k, a, b, c, d, e, f, g, h, i) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            let client = ClientID(stored: "client-1")
            let values: (String?, String, String?, Int64?, Double?, Bool?, Int?, [UInt8]?, ClientID?) = (
                "", "a\u{0}b é 👩‍👩‍👧", nil, Int64.min, 0.1, true, nil, Array(#"{"x":1}"#.utf8), client
            )
            try db.cachedStatement(sql: sql).execute { binder in
                binder.bind(Int64(1))
                binder.bind(values.0)
                binder.bind(values.1)
                binder.bind(values.2)
                binder.bind(values.3)
                binder.bind(values.4)
                binder.bind(values.5)
                binder.bind(values.6)
                binder.bind(text: values.7)
                binder.bind(values.8)
            }
            try db.execute(sql: sql, arguments: [
                2, values.0, values.1, values.2, values.3, values.4, values.5, values.6,
                values.7.map { String(decoding: $0, as: UTF8.self) }, values.8,
            ])
            let columns = "typeof(a), a, typeof(b), b, typeof(c), typeof(d), d, typeof(e), e, typeof(f), f, typeof(g), typeof(h), h, typeof(i), i"
            let ours = try Row.fetchOne(db, sql: "SELECT \(columns) FROM t WHERE k = 1")
            let theirs = try Row.fetchOne(db, sql: "SELECT \(columns) FROM t WHERE k = 2")
            #expect(ours != nil)
            #expect(ours == theirs)
            // Every byte, the NUL and those after it included.
            #expect(try Int.fetchOne(db, sql: "SELECT length(CAST(b AS BLOB)) FROM t WHERE k = 1") == values.1.utf8.count)
            #expect(try String.fetchOne(db, sql: "SELECT hex(b) FROM t WHERE k = 1") == values.1.utf8.map { String(format: "%02X", $0) }.joined())

            // The statement runs again with new values, and a wrong count of them is an error, not a run.
            try db.cachedStatement(sql: sql).execute { binder in
                binder.bind(Int64(3))
                for _ in 0..<9 { binder.bind(String?.none) }
            }
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t WHERE k = 3 AND a IS NULL AND i IS NULL") == 1)
            #expect(throws: DatabaseError.self) {
                try db.cachedStatement(sql: sql).execute { binder in binder.bind(Int64(4)) }
            }
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == 3)
        }
    }
}
