/// Bytes eight at a time, for the JSON scanner: which bytes of a word (read little-endian, so the
/// first byte is the lowest) are a given byte, or below a limit. An answer has the high bit of each
/// such byte set, exact up to the first of them (a borrow may also mark bytes after it), so
/// `trailingZeroBitCount / 8` is where the first one is.
enum ByteWords {
    /// The high bit of every byte.
    static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The eight bytes at `offset` of `bytes` (which holds at least `offset + 8`).
    @inline(__always)
    static func word(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The bytes of `word` equal to `byte`.
    @inline(__always)
    static func bytes(of word: UInt64, equalTo byte: UInt8) -> UInt64 {
        let x = word ^ (0x0101_0101_0101_0101 &* UInt64(byte))
        return (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
    }

    /// The bytes of `word` below `limit` (at most 0x80).
    @inline(__always)
    static func bytes(of word: UInt64, below limit: UInt8) -> UInt64 {
        (word &- 0x0101_0101_0101_0101 &* UInt64(limit)) & ~word & 0x8080_8080_8080_8080
    }
}
