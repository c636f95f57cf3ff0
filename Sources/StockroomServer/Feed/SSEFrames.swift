import NIOCore
import StockroomStorage
import StockroomWire
import Synchronization

/// Each recent change's SSE frame, encoded once and shared by every subscriber's write (NIO writes
/// a shared `ByteBuffer` without copying it): a commit seen by 1,000 streams formats one frame.
/// Kept as a whole HTTP/1.1 chunk (`SIZE CRLF frame CRLF`), the frame a slice of it: a parked
/// stream writes the chunk as it is, one write past the HTTP encoder (whose chunk framing takes three
/// writes through the pipeline per change, per stream); a stream in a task writes the frame.
final class SSEFrames: Sendable {
    static let capacity = 4096

    private struct Slot {
        var seq: Int64 = -1
        var chunk = ByteBuffer()
    }

    private let slots = Mutex<[Slot]>(Array(repeating: Slot(), count: SSEFrames.capacity))
    let epoch: String

    init(epoch: String) {
        self.epoch = epoch
    }

    /// `id: CURSOR`, `event: change`, `data: CHANGE` and the blank line that ends the event.
    func frame(_ entry: ChangeEntry) -> ByteBuffer {
        Self.frame(ofChunk: chunk(entry))
    }

    /// The change's frame as one HTTP/1.1 chunk.
    func chunk(_ entry: ChangeEntry) -> ByteBuffer {
        // A move is one filter's view of the entry, not the entry every stream shares.
        if entry.move != nil { return Self.chunk(of: Self.encode(entry, epoch: epoch)) }
        if let chunk = sharedChunk(entry) { return chunk }
        let chunk = Self.chunk(of: Self.encode(entry, epoch: epoch))
        slots.withLock { $0[Int(entry.seq % Int64(Self.capacity))] = Slot(seq: entry.seq, chunk: chunk) }
        return chunk
    }

    /// Pages of more changes than this go as one chunk (`chunks(_:)`); smaller ones as their
    /// shared chunks.
    static let sharedChunksUpTo = 8

    /// What a page of changes is written as: a small page (a live commit, which every stream
    /// writes) as each change's shared chunk; a larger one (a reader catching up) as one chunk, so
    /// that the stream's pipeline and its client handle the page once, not once per change. A
    /// large page copies the frames already shared and encodes the others without keeping them:
    /// a catch-up through old entries does not push the live ones out of the shared slots.
    func chunks(_ entries: [ChangeEntry]) -> [ByteBuffer] {
        guard entries.count > Self.sharedChunksUpTo else { return entries.map(chunk) }
        var body = ByteBuffer()
        body.reserveCapacity(entries.reduce(0) { $0 + $1.json.utf8.count + 100 })
        for entry in entries {
            if let shared = sharedChunk(entry) {
                var frame = Self.frame(ofChunk: shared)
                body.writeBuffer(&frame)
            } else {
                Self.encode(entry, epoch: epoch, into: &body)
            }
        }
        return [Self.chunk(of: body)]
    }

    /// The change's chunk when a stream has already shared it.
    private func sharedChunk(_ entry: ChangeEntry) -> ByteBuffer? {
        guard entry.move == nil else { return nil }
        let index = Int(entry.seq % Int64(Self.capacity))
        return slots.withLock { $0[index].seq == entry.seq ? $0[index].chunk : nil }
    }

    static func encode(_ entry: ChangeEntry, epoch: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        encode(entry, epoch: epoch, into: &buffer)
        return buffer
    }

    /// Writes the change's frame at the end of `buffer`.
    static func encode(_ entry: ChangeEntry, epoch: String, into buffer: inout ByteBuffer) {
        let cursor = FeedCursor(epoch: epoch, seq: entry.seq).encoded
        buffer.reserveCapacity(minimumWritableBytes: cursor.utf8.count + entry.json.utf8.count + 32)
        buffer.writeStaticString("id: ")
        buffer.writeString(cursor)
        buffer.writeStaticString("\nevent: change\ndata: ")
        buffer.writeString(entry.json)
        buffer.writeStaticString("\n\n")
    }

    /// `event: progress`: a filtered stream's cursor moved past changes its filter hides.
    static func progressEvent(_ cursor: FeedCursor) -> ByteBuffer {
        let encoded = cursor.encoded
        return ByteBuffer(string: "id: \(encoded)\nevent: progress\ndata: {\"cursor\":\"\(encoded)\"}\n\n")
    }

    /// The contract's `event: error` with the error's body, which ends a stream.
    static func errorEvent(_ error: APIError) -> ByteBuffer {
        ByteBuffer(string: "event: error\ndata: \(error.json())\n\n")
    }

    /// `body` framed as one HTTP/1.1 chunk: its size in hex, CRLF, the bytes, CRLF. Not for an empty body (that is the last chunk).
    static func chunk(of body: ByteBuffer) -> ByteBuffer {
        let size = String(body.readableBytes, radix: 16)
        var chunk = ByteBuffer()
        chunk.reserveCapacity(size.utf8.count + body.readableBytes + 4)
        chunk.writeString(size)
        chunk.writeStaticString("\r\n")
        chunk.writeImmutableBuffer(body)
        chunk.writeStaticString("\r\n")
        return chunk
    }

    /// The body inside a chunk made by `chunk(of:)`, sharing its storage.
    static func frame(ofChunk chunk: ByteBuffer) -> ByteBuffer {
        let header = chunk.readableBytesView.firstIndex(of: UInt8(ascii: "\n")).map { $0 - chunk.readerIndex + 1 } ?? 0
        return chunk.getSlice(at: chunk.readerIndex + header, length: chunk.readableBytes - header - 2) ?? ByteBuffer()
    }
}
