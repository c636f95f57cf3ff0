import StockroomStorage

/// Ends a snapshot's read when its response is dropped without its body having run (the
/// connection closed first); the body cancels the pipe itself otherwise.
final class PipeOwner: Sendable {
    let pipe: ChunkPipe

    init(_ pipe: ChunkPipe) {
        self.pipe = pipe
    }

    deinit {
        pipe.cancel()
    }
}
