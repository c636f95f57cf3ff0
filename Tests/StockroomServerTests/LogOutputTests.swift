import Foundation
import Testing

@testable import StockroomServer

/// `LogOutput` writes on a thread of its own once batching: every line arrives, whole and in the
/// order each thread logged it, and `flush` returns only once all of them are written.
@Suite struct LogOutputTests {
    @Test func batchedLinesFromManyThreadsAllArriveInOrderByFlush() async throws {
        let threads = 4
        let linesPerThread = 5_000
        let lines = try await readingPipe { writeEnd in
            let output = LogOutput(fileDescriptor: writeEnd)
            output.write("before batching\n")
            output.startBatching()
            await withTaskGroup(of: Void.self) { group in
                for thread in 0..<threads {
                    group.addTask {
                        for line in 0..<linesPerThread { output.write("thread \(thread) line \(line) \(String(repeating: "x", count: line % 300))\n") }
                    }
                }
            }
            output.flush()
        }.split(separator: "\n")
        #expect(lines.first == "before batching")
        #expect(lines.count == 1 + threads * linesPerThread)
        var next = [Int](repeating: 0, count: threads)
        for line in lines.dropFirst() {
            let words = line.split(separator: " ", omittingEmptySubsequences: false)
            guard words.count == 5, let thread = Int(words[1]), let number = Int(words[3]), thread < threads else {
                Issue.record("a line arrived cut or mixed: \(line.prefix(80))")
                return
            }
            #expect(number == next[thread], "thread \(thread)'s lines in order")
            #expect(words[4].count == number % 300)
            next[thread] = number + 1
        }
        #expect(next == [Int](repeating: linesPerThread, count: threads))
    }
}

extension LogOutputTests {
    /// An output whose reader never reads (a stalled pipe) holds the writer thread in `write(2)`,
    /// but not whoever flushes: `flush` gives up after its timeout, so the process can exit.
    @Test func aFlushGivesUpOnAPipeNobodyReads() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
        defer { close(ends[0]) }
        let output = LogOutput(fileDescriptor: ends[1])
        output.startBatching()
        // Past the pipe's buffer (64 KiB), so that the writer blocks with lines left.
        let line = String(repeating: "x", count: 1_023) + "\n"
        for _ in 0..<256 { output.write(line) }
        #expect(!output.flush(timeout: .milliseconds(200)), "the pipe cannot have taken 256 KiB")
        // Read what waits: the writer goes on, and a flush now returns with every line written.
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var total = 0
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        let deadline = ContinuousClock.now + .seconds(30)
        while total < 256 * 1_024, ContinuousClock.now < deadline {
            let count = read(ends[0], &chunk, chunk.count)
            if count > 0 { total += count } else { usleep(1_000) }
        }
        #expect(total == 256 * 1_024)
        #expect(output.flush(timeout: .seconds(30)))
        close(ends[1])
    }
}

/// Runs `body` with the write end of a pipe whose read end is drained concurrently (so a full pipe
/// never stalls a writer); closes it after and returns everything written.
func readingPipe(_ body: (Int32) async throws -> Void) async throws -> String {
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
    let (readEnd, writeEnd) = (ends[0], ends[1])
    defer { close(readEnd) }
    let reader = Task.detached { () -> String in
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(readEnd, &chunk, chunk.count)
            if count <= 0 { break }
            data.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: data, as: UTF8.self)
    }
    do {
        try await body(writeEnd)
    } catch {
        close(writeEnd)
        _ = await reader.value
        throw error
    }
    close(writeEnd)
    return await reader.value
}
