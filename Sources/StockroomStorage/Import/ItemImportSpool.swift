import Foundation
import StockroomCore
import StockroomWire
import Synchronization

/// The rows of a CSV import, read as the upload arrives and kept in a temporary file until they
/// are applied in one transaction (`Storage.importItems`): memory holds a buffer, not the file, and
/// a slow upload holds no transaction open. Written once, then read once from the start; the file
/// is removed when the spool goes.
public final class ItemImportSpool: @unchecked Sendable {
    // @unchecked: written by one task, then read by one write, one after the other.
    private let path: String
    private var handle: FileHandle?
    private var buffer: [UInt8] = []
    private var input: [UInt8] = []
    private var position = 0
    private var ended = false
    /// How many rows were written.
    public private(set) var count = 0
    private let takenCount = Atomic(0)
    /// How many rows `next` has handed out so far (read from any thread: an import's progress).
    public var taken: Int { takenCount.load(ordering: .relaxed) }

    /// A new spool in `directory` (the system's temporary directory by default).
    public init(directory: String = NSTemporaryDirectory()) throws {
        path = (directory as NSString).appendingPathComponent("stockroom-import-\(UUID().uuidString).rows")
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forUpdatingAtPath: path)
        else { throw StoreError.unavailable("cannot create the import's temporary file in \(directory)") }
        self.handle = handle
    }

    deinit {
        try? handle?.close()
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Adds a row.
    public func append(_ row: ItemImportRow) throws {
        let fields = row.fields
        put(Int64(row.line))
        put(row.id?.description ?? "")
        put(Int64(row.version ?? 0))
        put(fields.name)
        switch fields.status {
        case .inStock(let quantity):
            buffer.append(0)
            put(Int64(quantity))
        case .outOfStock(let isOnBackOrder):
            buffer.append(isOnBackOrder ? 2 : 1)
        }
        if let color = fields.color {
            buffer.append(1)
            put(color.name)
            for value in [color.red, color.green, color.blue] { put(Int64(bitPattern: UInt64(value.bitPattern))) }
        } else {
            buffer.append(0)
        }
        count += 1
        if buffer.count >= Self.chunk { try flush() }
    }

    /// Ends the writing; the rows are then read from the first (`next`).
    public func finishWriting() throws {
        try flush()
        try handle?.seek(toOffset: 0)
    }

    /// The next row, or nil after the last.
    public func next() throws -> ItemImportRow? {
        guard try fill(8) else { return nil }
        let line = Int(try int())
        let id = try string()
        let version = Int(try int())
        let name = try string()
        let status: Status
        switch try byte() {
        case 0: status = .inStock(quantity: Int(try int()))
        case 1: status = .outOfStock(isOnBackOrder: false)
        default: status = .outOfStock(isOnBackOrder: true)
        }
        var color: Color?
        if try byte() == 1 {
            let colorName = try string()
            let red = Double(bitPattern: UInt64(bitPattern: try int()))
            let green = Double(bitPattern: UInt64(bitPattern: try int()))
            let blue = Double(bitPattern: UInt64(bitPattern: try int()))
            color = Color(name: colorName, red: red, green: green, blue: blue)
        }
        guard let fields = try? ValidDraft(Draft(name: name, color: color, status: status)) else {
            throw StoreError.unavailable("the import's temporary file is damaged")
        }
        takenCount.add(1, ordering: .relaxed)
        return ItemImportRow(line: line, id: id.isEmpty ? nil : ItemID(id), version: version == 0 ? nil : version, fields: fields)
    }

    // MARK: Writing

    private static let chunk = 1 << 16

    private func put(_ value: Int64) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    private func put(_ text: String) {
        put(Int64(text.utf8.count))
        buffer.append(contentsOf: text.utf8)
    }

    private func flush() throws {
        guard !buffer.isEmpty else { return }
        do {
            try handle?.write(contentsOf: buffer)
        } catch {
            throw StoreError.unavailable("cannot write the import's temporary file: \(error)")
        }
        buffer.removeAll(keepingCapacity: true)
    }

    // MARK: Reading

    /// Whether `bytes` more bytes are at hand (reading the next chunk when needed).
    private func fill(_ bytes: Int) throws -> Bool {
        while input.count - position < bytes {
            guard !ended else {
                if input.count == position { return false }
                throw StoreError.unavailable("the import's temporary file ends inside a row")
            }
            let more = try handle?.read(upToCount: Self.chunk) ?? Data()
            input.removeSubrange(0..<position)
            position = 0
            if more.isEmpty { ended = true } else { input.append(contentsOf: more) }
        }
        return true
    }

    private func byte() throws -> UInt8 {
        guard try fill(1) else { throw StoreError.unavailable("the import's temporary file ends inside a row") }
        defer { position += 1 }
        return input[position]
    }

    private func int() throws -> Int64 {
        guard try fill(8) else { throw StoreError.unavailable("the import's temporary file ends inside a row") }
        var value: Int64 = 0
        for index in 0..<8 { value |= Int64(input[position + index]) << (8 * index) }
        position += 8
        return value
    }

    private func string() throws -> String {
        let length = Int(try int())
        guard length >= 0, try fill(length) else { throw StoreError.unavailable("the import's temporary file ends inside a row") }
        defer { position += length }
        return String(decoding: input[position..<(position + length)], as: UTF8.self)
    }
}
