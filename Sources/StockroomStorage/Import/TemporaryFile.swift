import Foundation

/// A file in the temporary directory written once through a buffer, then read once from its
/// start in chunks: where an import keeps what it must not hold in memory (its rows, its rejected
/// rows). Readable and writable by its owner only; removed when it goes. Used by one task at a time.
public final class TemporaryFile {
    private let path: String
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var input: [UInt8] = []
    private var position = 0
    private var ended = false
    private static let chunk = 1 << 16

    /// A new empty file named after `purpose`.
    public init(_ purpose: String) throws {
        path = (NSTemporaryDirectory() as NSString).appendingPathComponent("stockroom-\(purpose)-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forUpdatingAtPath: path)
        else { throw StoreError.unavailable("cannot create a temporary file in \(NSTemporaryDirectory())") }
        self.handle = handle
    }

    deinit {
        try? handle.close()
        try? FileManager.default.removeItem(atPath: path)
    }

    // MARK: Writing

    public func write(_ bytes: some Sequence<UInt8>) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= Self.chunk { try flush() }
    }

    public func write(_ value: Int64) throws {
        try withUnsafeBytes(of: value.littleEndian) { try write($0) }
    }

    public func write(_ text: String) throws {
        try write(Int64(text.utf8.count))
        try write(text.utf8)
    }

    /// Ends the writing; reading starts at the file's first byte.
    public func finishWriting() throws {
        try flush()
        try handle.seek(toOffset: 0)
    }

    private func flush() throws {
        guard !buffer.isEmpty else { return }
        do {
            try handle.write(contentsOf: buffer)
        } catch {
            throw StoreError.unavailable("cannot write a temporary file: \(error)")
        }
        buffer.removeAll(keepingCapacity: true)
    }

    // MARK: Reading

    /// Whether the file has no more bytes to read.
    public var atEnd: Bool {
        get throws { try !fill(1) }
    }

    public func readBytes(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, try fill(count) else { throw StoreError.unavailable("a temporary file ends inside a record") }
        defer { position += count }
        return input[position..<(position + count)]
    }

    public func readByte() throws -> UInt8 {
        try readBytes(1).first!
    }

    public func readInt() throws -> Int64 {
        var value: Int64 = 0
        for (index, byte) in try readBytes(8).enumerated() { value |= Int64(byte) << (8 * index) }
        return value
    }

    public func readString() throws -> String {
        String(decoding: try readBytes(Int(try readInt())), as: UTF8.self)
    }

    /// Whether `count` more bytes are at hand, reading the next chunks when needed.
    private func fill(_ count: Int) throws -> Bool {
        while input.count - position < count {
            guard !ended else { return false }
            let more = try handle.read(upToCount: Self.chunk) ?? Data()
            input.removeSubrange(0..<position)
            position = 0
            if more.isEmpty { ended = true } else { input.append(contentsOf: more) }
        }
        return true
    }
}
