import Foundation
import StockroomCore
import StockroomWire
import Synchronization

/// The rows of a CSV import, read as the upload arrives and kept in a temporary file until they
/// are applied in one transaction (`Storage.importItems`): memory holds a buffer, not the file, and
/// a slow upload holds no transaction open. Written once, then read once from the start
/// (`TemporaryFile`).
public final class ItemImportSpool: @unchecked Sendable {
    // @unchecked: written by one task, then read by one write, one after the other.
    private let file: TemporaryFile
    /// How many rows were written.
    public private(set) var count = 0
    private let takenCount = Atomic(0)
    /// How many rows `next` has handed out so far (read from any thread: an import's progress).
    public var taken: Int { takenCount.load(ordering: .relaxed) }

    public init() throws {
        file = try TemporaryFile("import-rows")
    }

    /// Adds a row.
    public func append(_ row: ItemImportRow) throws {
        let fields = row.fields
        try file.write(Int64(row.line))
        try file.write(row.id?.description ?? "")
        try file.write(Int64(row.version ?? 0))
        try file.write(fields.name)
        switch fields.status {
        case .inStock(let quantity):
            try file.write([0])
            try file.write(Int64(quantity))
        case .outOfStock(let isOnBackOrder):
            try file.write([isOnBackOrder ? 2 : 1])
        }
        if let color = fields.color {
            try file.write([1])
            try file.write(color.name)
            for value in [color.red, color.green, color.blue] { try file.write(Int64(bitPattern: value.bitPattern)) }
        } else {
            try file.write([0])
        }
        count += 1
    }

    /// Ends the writing; the rows are then read from the first (`next`).
    public func finishWriting() throws {
        try file.finishWriting()
    }

    /// The next row, or nil after the last.
    public func next() throws -> ItemImportRow? {
        guard try !file.atEnd else { return nil }
        let line = Int(try file.readInt())
        let id = try file.readString()
        let version = Int(try file.readInt())
        let name = try file.readString()
        let status: Status
        switch try file.readByte() {
        case 0: status = .inStock(quantity: Int(try file.readInt()))
        case 1: status = .outOfStock(isOnBackOrder: false)
        default: status = .outOfStock(isOnBackOrder: true)
        }
        var color: Color?
        if try file.readByte() == 1 {
            let colorName = try file.readString()
            let red = Double(bitPattern: UInt64(bitPattern: try file.readInt()))
            let green = Double(bitPattern: UInt64(bitPattern: try file.readInt()))
            let blue = Double(bitPattern: UInt64(bitPattern: try file.readInt()))
            color = Color(name: colorName, red: red, green: green, blue: blue)
        }
        guard let fields = try? ValidDraft(Draft(name: name, color: color, status: status)) else {
            throw StoreError.unavailable("the import's temporary file is damaged")
        }
        takenCount.add(1, ordering: .relaxed)
        return ItemImportRow(line: line, id: id.isEmpty ? nil : ItemID(id), version: version == 0 ? nil : version, fields: fields)
    }
}
