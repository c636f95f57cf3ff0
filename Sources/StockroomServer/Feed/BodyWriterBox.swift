import Hummingbird
import NIOCore

/// Holds a streamed response's body writer for the task that streams into it.
final class BodyWriterBox: @unchecked Sendable {
    // Safe without a lock: the handler hands the writer to the follow loop's single task and takes it
    // back only after that task's group has ended, so no two tasks ever touch it at once.
    var writer: any ResponseBodyWriter

    init(_ writer: any ResponseBodyWriter) {
        self.writer = writer
    }

    func write(_ text: String) async throws {
        try await writer.write(ByteBuffer(string: text))
    }

    func write(_ buffer: ByteBuffer) async throws {
        try await writer.write(buffer)
    }

    func write(contentsOf buffers: [ByteBuffer]) async throws {
        try await writer.write(contentsOf: buffers)
    }

    func finish() async throws {
        let writer = self.writer
        try await writer.finish(nil)
    }
}
