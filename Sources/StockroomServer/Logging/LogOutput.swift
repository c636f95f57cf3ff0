import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import Synchronization

/// Where log lines go: standard output, written by a thread of its own while the server runs.
///
/// swift-log's `StreamLogHandler.standardOutput` writes and flushes each line on the thread that
/// logs it: one `write(2)` per request on an event loop, under a lock both loops contend for.
/// Batched, the lines a busy server logs within 2 ms of each other go out in one write, and only the
/// first of them wakes the writer thread; a `LineLogHandler`'s lines are formatted by that thread
/// too, off the thread that logs (an event loop, for the request log, before the response goes out).
/// Lines keep their order. An output that cannot keep up never holds the thread that logs (an
/// event loop): past `capacity` unwritten bytes a line is dropped and counted, in
/// `stockroom_log_lines_dropped_total` and in a `warning` line the writer writes once it catches
/// up, saying how many. A line logged right before a `kill -9` may be lost; `flush()` runs before
/// the process exits normally, and gives up after `flushTimeout` on an output that takes nothing.
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

    /// Lines dropped since the writer last said so (guarded by `lock`).
    private nonisolated(unsafe) var dropped = 0
    /// Lines dropped since the output was made.
    private let droppedTotal = Atomic<Int>(0)

    /// A line waiting for the writer: bytes, or a record the writer formats.
    private enum Entry {
        case bytes([UInt8])
        case record(LineLogHandler.Record)
        case request(RequestLine)
    }

    /// Lines dropped so far because the output could not keep up.
    public var droppedLines: Int { droppedTotal.load(ordering: .relaxed) }

    /// `stockroom_log_lines_dropped_total`: made when the server starts (`registerMetrics`), so that
    /// it reads 0 until a line is dropped.
    private static let droppedCounter = Mutex<Counter?>(nil)

    /// Creates the dropped-lines counter in the metrics system now (the server calls it at startup).
    public static func registerMetrics() {
        droppedCounter.withLock { counter in
            if counter == nil { counter = Counter(label: "stockroom_log_lines_dropped_total") }
        }
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
        append(.bytes(bytes), counting: bytes.count)
    }

    /// Writes a `LineLogHandler` line: formatted by the writer thread, or here until `startBatching`.
    func write(_ record: LineLogHandler.Record) {
        lock.lock()
        guard batching else {
            Self.writeAll(record.line(), to: fileDescriptor)
            lock.unlock()
            return
        }
        append(.record(record), counting: Self.recordBytes)
    }

    /// Writes the request log's line: formatted by the writer thread, or here until `startBatching`.
    func write(_ line: RequestLine) {
        lock.lock()
        guard batching else {
            var bytes: [UInt8] = []
            line.append(to: &bytes)
            Self.writeAll(bytes, to: fileDescriptor)
            lock.unlock()
            return
        }
        append(.request(line), counting: Self.recordBytes)
    }

    /// With the lock held: buffers `entry` and wakes the writer, or, past `capacity`, drops it and
    /// counts it; unlocks.
    private func append(_ entry: Entry, counting bytes: Int) {
        guard bufferedBytes <= Self.capacity else {
            dropped += 1
            lock.unlock()
            droppedTotal.wrappingAdd(1, ordering: .relaxed)
            Self.droppedCounter.withLock { $0?.increment() }
            return
        }
        bufferedBytes += bytes
        buffer.append(entry)
        wakeWriterAndUnlock()
    }

    /// With the lock held and a line just buffered: wakes the writer if it waits, and unlocks.
    private func wakeWriterAndUnlock() {
        if state == .idle {
            // Only the first line after a quiet spell wakes the writer (a futex call).
            state = .pending
            lock.unlock(withValue: .pending)
        } else {
            // The writer is writing or about to take the buffer; it looks again before it waits.
            lock.unlock()
        }
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

    /// Returns once every line logged so far has been written, or once `timeout` has passed while
    /// the output does not take them (a stalled pipe, whose reader never reads): then false, and
    /// a process that exits leaves them unwritten rather than never exiting.
    @discardableResult
    public func flush(timeout: Duration = LogOutput.flushTimeout) -> Bool {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        guard lock.lock(whenValue: .idle, timeoutSeconds: seconds) else { return false }
        lock.unlock()
        return true
    }

    /// How long `flush` waits by default: the server's exit after a graceful shutdown waits this
    /// long at most for its last lines, within the 5 s a shutdown may take.
    public static let flushTimeout: Duration = .seconds(1)

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
            let droppedNow = dropped
            dropped = 0
            state = .writing
            lock.unlock(withValue: .writing)
            for entry in taken {
                switch entry {
                case .bytes(let line): bytes.append(contentsOf: line)
                case .record(let record): record.append(to: &bytes)
                case .request(let line): line.append(to: &bytes)
                }
            }
            if droppedNow > 0 { Self.appendDropped(droppedNow, to: &bytes) }
            taken.removeAll(keepingCapacity: true)
            Self.writeAll(bytes, to: fileDescriptor)
            bytes.removeAll(keepingCapacity: true)
            lock.lock()
            state = buffer.isEmpty ? .idle : .pending
            lock.unlock(withValue: state)
        }
    }

    /// The line that says `count` lines were dropped before this write.
    private static func appendDropped(_ count: Int, to bytes: inout [UInt8]) {
        var pairs: [(key: String, value: Logger.Metadata.Value)] = [("dropped", .string(String(count)))]
        LineLogHandler.append(
            second: time(nil), level: .warning, label: "stockroom", pairs: &pairs, source: RequestLine.source,
            message: "log lines dropped: the log output did not keep up", to: &bytes)
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
