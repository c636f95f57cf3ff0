import Foundation
import StockroomCore
import StockroomWire

/// How an import runs (`POST /v1/items/import`).
public struct ItemImportOptions: Hashable, Sendable {
    /// What a rejected row does to the others.
    public enum OnError: String, Hashable, Sendable {
        /// Any rejected row and nothing is applied.
        case abort
        /// The valid rows are applied.
        case skip
    }

    /// Checks every row and changes nothing.
    public var dryRun: Bool
    public var onError: OnError
    /// How many rejects the result lists (`rejected` counts them all).
    public var listedRejects: Int

    public init(dryRun: Bool = false, onError: OnError = .abort, listedRejects: Int = ItemImportResult.listedRejects) {
        self.dryRun = dryRun
        self.onError = onError
        self.listedRejects = listedRejects
    }
}

/// What an import did, or would do (a dry run): the rows inserted, updated and left unchanged, and
/// those rejected while the rows were applied (a stale version, an id deleted before), the first
/// `ItemImportResult.listedRejects` of them listed.
public struct ItemImportResult: Hashable, Sendable {
    /// At most this many rejects are listed; `rejected` counts them all.
    public static let listedRejects = 1_000

    public var inserted = 0
    public var updated = 0
    public var unchanged = 0
    public var rejected = 0
    /// The first rejects, in line order.
    public var rejects: [ItemImportReject] = []
    /// Whether the rows were applied (false: a dry run, or rejects under `abort`).
    public var applied = false
    /// The log's head after the import (before it, when nothing was applied).
    public var head: Int64 = 0

    public init() {}

    /// This result with the log's head after its import (or before it, when it was rolled back).
    public func positioned(at head: Int64) -> ItemImportResult {
        var result = self
        result.head = head
        return result
    }

    /// Counts a rejected row, listing it while the list has room (`limit`).
    public mutating func reject(_ reject: ItemImportReject, limit: Int = Self.listedRejects) {
        rejected += 1
        if rejects.count < limit { rejects.append(reject) }
    }
}

/// Thrown by the rules to roll an import back (a dry run; rejects under `abort`) with what it found.
public struct ItemImportRolledBack: Error, Sendable {
    public var result: ItemImportResult

    public init(_ result: ItemImportResult) {
        self.result = result
    }
}

extension WriteRules {
    /// Applies an import's rows (`next`, in file order) in the write's transaction: a row without
    /// an id inserts a new item; with one, it updates that live item (`version`, when given, must be
    /// the item's), leaves it as it is when its fields are the item's (`unchanged`: no write, no
    /// entry), or inserts it with that id when no item ever had it. Each applied row is one change
    /// entry. `rejectedBefore`: rows the file's reading rejected already. Rolls everything back
    /// (`ItemImportRolledBack`) for a dry run, and under `abort` when any row was rejected.
    @inlinable
    public static func importItems<Rows: WriteRows>(
        _ rows: Rows, next: () throws -> ItemImportRow?, rejectedBefore: Int, options: ItemImportOptions, origin: Origin
    ) async throws -> ItemImportResult {
        var result = ItemImportResult()
        while let row = try next() {
            let now = Timestamp.milliseconds(Date())
            guard let id = row.id else {
                // A fresh random id that exists already: another.
                var item: Item?
                while item == nil { item = try await rows.insertItem(.random(), fields: row.fields, at: now) }
                try await logUpsert(rows, item!, before: nil, origin: origin)
                result.inserted += 1
                continue
            }
            if let stored = try await rows.liveItem(id) {
                if let version = row.version, version != stored.item.version {
                    result.reject(
                        ItemImportReject(
                            line: row.line, column: "version", code: "preconditionFailed",
                            message: "item \(id) is at version \(stored.item.version), not \(version)", row: row),
                        limit: options.listedRejects)
                    continue
                }
                if row.fields.draft == Draft(name: stored.item.name, color: stored.item.color, status: stored.item.status) {
                    result.unchanged += 1
                    continue
                }
                let item = try await rows.updateItem(stored, fields: row.fields, at: now)
                try await logUpsert(rows, item, before: stored.item, origin: origin)
                result.updated += 1
            } else if row.version != nil {
                result.reject(
                    ItemImportReject(line: row.line, column: "id", code: "notFound", message: "no item \(id)", row: row), limit: options.listedRejects)
            } else if let item = try await rows.insertItem(id, fields: row.fields, at: now) {
                try await logUpsert(rows, item, before: nil, origin: origin)
                result.inserted += 1
            } else {
                result.reject(
                    ItemImportReject(
                        line: row.line, column: "id", code: "alreadyExists", message: "item \(id) was deleted; ids are not reused", row: row),
                    limit: options.listedRejects)
            }
        }
        if options.dryRun || (options.onError == .abort && rejectedBefore + result.rejected > 0) {
            throw ItemImportRolledBack(result)
        }
        result.applied = true
        return result
    }
}
