import Foundation
import NIOConcurrencyHelpers

/// Where log lines go: standard output, written by a thread of its own while the server runs.
///
/// swift-log's `StreamLogHandler.standardOutput` writes and flushes each line on the thread that
/// logs it: one `write(2)` per request on an event loop, under a lock both loops contend for.
/// Batched, the lines a busy server logs within 2 ms of each other go out in one write, and only the
/// first of them wakes the writer thread; a `LineLogHandler`'s lines are formatted by that thread
/// too, off the thread that logs (an event loop, for the request log, before the response goes out).
/// Lines keep their order; nothing is dropped: past `capacity` unwritten bytes, loggers wait for
/// the writer (as a blocked `fwrite` would make them wait). A line logged right before a `kill -9`
/// may be lost; `flush()` runs before the process exits normally.
public final class LogOutput: TextOutputStream, Sendable {
    /// Standard output, as the `stockroom` command logs.
    public static let standardOutput = LogOutput(fileDescriptor: STDOUT_FILENO)

    /// Unwritten bytes past which loggers wait for the writer.
    static let capacity = 1 << 20

    private enum State: Equatable {
        /// Nothing to write, nothing being written.
        case idle
        /// Lines waiting for the writer.
        case pending
        /// The writer writes what it took; nothing new yet.
        case writing
    }

    private let fileDescriptor: Int32
    private let lock = ConditionLock(value: State.idle)
    // Guarded by `lock`.
    private nonisolated(unsafe) var buffer: [Entry] = []
    /// Bytes in `buffer` (a record counts as `recordBytes`).
    private nonisolated(unsafe) var bufferedBytes = 0
    private nonisolated(unsafe) var batching = false
    /// The lock's value, readable while holding it (`ConditionLock.value` takes the lock itself).
    private nonisolated(unsafe) var state = State.idle

    init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// A line waiting for the writer: bytes, or a record the writer formats.
    private enum Entry {
        case bytes([UInt8])
        case record(LineLogHandler.Record)
    }

    /// What a record counts for against `capacity` (a request log line is ~200 bytes).
    static let recordBytes = 256

    public func write(_ string: String) {
        write(bytes: string.utf8)
    }

    /// Writes a line's UTF-8 bytes (`LineLogHandler` builds its lines as bytes).
    func write(bytes: some Collection<UInt8>) {
        lock.lock()
        guard batching else {
            // Until `startBatching`, and in every other command: written at once, as swift-log does.
            Self.writeAll(Array(bytes), to: fileDescriptor)
            lock.unlock()
            return
        }
        let bytes = Array(bytes)
        bufferedBytes += bytes.count
        buffer.append(.bytes(bytes))
        wakeWriterAndUnlock()
    }

    /// Writes a `LineLogHandler` line: formatted by the writer thread, or here until `startBatching`.
    func write(_ record: LineLogHandler.Record) {
        lock.lock()
        guard batching else {
            Self.writeAll(record.line(), to: fileDescriptor)
            lock.unlock()
            return
        }
        bufferedBytes += Self.recordBytes
        buffer.append(.record(record))
        wakeWriterAndUnlock()
    }

    /// With the lock held and a line just buffered: wakes the writer if it waits, unlocks, and waits
    /// for room past `capacity`.
    private func wakeWriterAndUnlock() {
        let full = bufferedBytes > Self.capacity
        if state == .idle {
            // Only the first line after a quiet spell wakes the writer (a futex call).
            state = .pending
            lock.unlock(withValue: .pending)
        } else {
            // The writer is writing or about to take the buffer; it looks again before it waits.
            lock.unlock()
        }
        if full { waitForRoom() }
    }

    /// From now on, lines are written by a thread of this output's own.
    public func startBatching() {
        lock.lock()
        defer { lock.unlock() }
        guard !batching else { return }
        batching = true
        let thread = Thread { [self] in runWriter() }
        thread.name = "stockroom-log"
        thread.start()
    }

    /// Returns once every line logged so far has been written.
    public func flush() {
        lock.lock(whenValue: .idle)
        lock.unlock()
    }

    /// Waits until the writer has taken what is buffered (past `capacity`, as a stalled output
    /// would make `fwrite` wait).
    private func waitForRoom() {
        while true {
            lock.lock()
            let room = bufferedBytes <= Self.capacity
            lock.unlock()
            if room { return }
            usleep(Self.gatherMicroseconds)
        }
    }

    private func runWriter() {
        var taken: [Entry] = []
        var bytes: [UInt8] = []
        while true {
            lock.lock(whenValue: .pending)
            lock.unlock()
            // Lines that arrive meanwhile join this write instead of waking the writer each.
            usleep(Self.gatherMicroseconds)
            lock.lock()
            swap(&taken, &buffer)
            bufferedBytes = 0
            state = .writing
            lock.unlock(withValue: .writing)
            for entry in taken {
                switch entry {
                case .bytes(let line): bytes.append(contentsOf: line)
                case .record(let record): record.append(to: &bytes)
                }
            }
            taken.removeAll(keepingCapacity: true)
            Self.writeAll(bytes, to: fileDescriptor)
            bytes.removeAll(keepingCapacity: true)
            lock.lock()
            state = buffer.isEmpty ? .idle : .pending
            lock.unlock(withValue: state)
        }
    }

    /// How long the writer waits after the first line before it writes what has arrived.
    static let gatherMicroseconds: UInt32 = 2_000

    private static func writeAll(_ bytes: [UInt8], to fileDescriptor: Int32) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Foundation.write(fileDescriptor, raw.baseAddress! + offset, raw.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    return  // a closed or failing output: the line is lost, as fwrite's would be
                }
            }
        }
    }
}
