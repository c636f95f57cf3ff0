import Foundation
import Synchronization
import TestSupport
import Testing

@testable import StockroomClient

/// The hand-over between a feed's connection and its reader (`FeedBuffer`), with real tasks.
@Suite("A feed's buffer")
struct FeedBufferTests {
    static func progress(_ seq: Int) -> FeedEvent {
        .progress(FeedCursor(epoch: "ab", seq: Int64(seq)))
    }

    static func seqs(_ events: [FeedEvent]) -> [Int] {
        events.compactMap { if case .progress(let cursor) = $0 { Int(cursor.seq) } else { nil } }
    }

    /// The progress seqs of a hand-over's runs, in order.
    static func seqs(_ runs: [[FeedEvent]]) -> [Int] {
        seqs(Array(runs.joined()))
    }

    @Test("the reader takes every event in order, however the writer's batches fall")
    func inOrder() async throws {
        let buffer = FeedBuffer(limit: 16)
        let writer = Task {
            var next = 1
            while next <= 5_000 {
                let count = Int.random(in: 1...40)
                await buffer.send((next..<(next + count)).map(Self.progress), bytes: count)
                next += count
            }
            buffer.finish()
        }
        var seen: [Int] = []
        while let runs = try await buffer.next() {
            #expect(runs.allSatisfy { !$0.isEmpty })
            seen += Self.seqs(runs)
        }
        await writer.value
        #expect(seen.prefix(5_000) == ArraySlice(1...5_000))
    }

    @Test("a hand-over is the sends' arrays as they came, in order, none copied into another")
    func runsAsSent() async throws {
        let buffer = FeedBuffer(limit: 1_000)
        await buffer.send([Self.progress(1), Self.progress(2)], bytes: 2)
        await buffer.send([], bytes: 0)
        await buffer.send([Self.progress(3)], bytes: 1)
        await buffer.send((4...6).map(Self.progress), bytes: 3)
        let runs = try #require(try await buffer.next())
        #expect(runs.map(Self.seqs) == [[1, 2], [3], [4, 5, 6]])
        #expect(buffer.waiting.events == 0)
    }

    @Test("the feed's iterator reads the runs in order: a batch ends at its run's end or at 256 events") @MainActor
    func iteratorAcrossRuns() async throws {
        let buffer = FeedBuffer(limit: 10_000)
        await buffer.send([Self.progress(1), Self.progress(2)], bytes: 2)
        await buffer.send([Self.progress(3)], bytes: 1)
        await buffer.send((4...600).map(Self.progress), bytes: 597)
        buffer.finish()
        var iterator = ChangeFeed.Iterator(base: buffer, owner: TaskOwner(Task {}))
        func seq(_ event: FeedEvent?) -> Int? { event.flatMap { Self.seqs([$0]).first } }
        func seqs(_ batch: ArraySlice<FeedEvent>?) -> [Int]? { batch.map { Self.seqs(Array($0)) } }
        #expect(seq(try await iterator.next(isolation: #isolation)) == 1)
        #expect(seqs(try await iterator.nextBatch()) == [2])
        #expect(seqs(try await iterator.nextBatch()) == [3])
        #expect(seqs(try await iterator.nextBatch()) == Array(4...259))
        #expect(seq(try await iterator.next(isolation: #isolation)) == 260)
        #expect(seqs(try await iterator.nextBatch()) == Array(261...516))
        #expect(seqs(try await iterator.nextBatch()) == Array(517...600))
        #expect(try await iterator.nextBatch() == nil)
    }

    @Test("the writer waits while the reader is the limit behind, and goes on once it reads")
    func backpressure() async throws {
        let buffer = FeedBuffer(limit: 4)
        let sent = Counter()
        let writer = Task {
            for seq in 1...12 {
                await buffer.send([Self.progress(seq)], bytes: 1)
                sent.add()
            }
        }
        // The writer stops at the limit: four events (a byte each) wait, and the fourth send has not returned.
        try await eventually("three sends returned") { sent.value == 3 }
        try await Task.sleep(for: .milliseconds(100))
        #expect(sent.value == 3)
        #expect(Self.seqs(try #require(try await buffer.next())) == [1, 2, 3, 4])
        try await eventually("the writer went on") { sent.value >= 7 }
        writer.cancel()
    }

    @Test("the limit counts the bytes the events came in: one large event fills it, many small ones do not")
    func limitInBytes() async throws {
        let buffer = FeedBuffer(limit: 1_000)
        // A thousand events in 999 bytes: under the limit, the send returns.
        await buffer.send((1...1_000).map(Self.progress), bytes: 999)
        let sent = Counter()
        let writer = Task {
            // One event in two bytes more takes the buffer to the limit: this send waits.
            await buffer.send([Self.progress(1_001)], bytes: 2)
            sent.add()
            // Events read apart from the stream (no bytes) do not count.
            await buffer.send([Self.progress(1_002)], bytes: 0)
            sent.add()
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(sent.value == 0)
        #expect(Self.seqs(try #require(try await buffer.next())).count == 1_001)
        try await eventually("the writer went on") { sent.value == 2 }
        #expect(Self.seqs(try #require(try await buffer.next())) == [1_002])
        await writer.value
    }

    @Test("an error ends the feed after the events before it")
    func errorAfterEvents() async throws {
        struct Gone: Error {}
        let buffer = FeedBuffer(limit: 100)
        await buffer.send([Self.progress(1), Self.progress(2)], bytes: 2)
        buffer.finish(throwing: Gone())
        #expect(Self.seqs(try #require(try await buffer.next())) == [1, 2])
        await #expect(throws: Gone.self) { try await buffer.next() }
        #expect(try await buffer.next() == nil)
        // Nothing is taken after the end.
        await buffer.send([Self.progress(3)], bytes: 1)
        #expect(try await buffer.next() == nil)
    }

    @Test("a waiting reader gets the end, and a cancelled reader stops waiting")
    func waitingReader() async throws {
        let buffer = FeedBuffer(limit: 100)
        let reader = Task { try await buffer.next() }
        try await Task.sleep(for: .milliseconds(50))
        buffer.finish()
        #expect(try await reader.value == nil)

        let other = FeedBuffer(limit: 100)
        let cancelled = Task { try await other.next() }
        try await Task.sleep(for: .milliseconds(50))
        cancelled.cancel()
        #expect(try await cancelled.value == nil)
    }

    @Test("a reader on the main actor lets its other work run during a long hand-over") @MainActor
    func yieldsDuringALongHandOver() async throws {
        let buffer = FeedBuffer(limit: 10_000)
        await buffer.send((1...1_000).map(Self.progress), bytes: 1_000)
        buffer.finish()
        var iterator = ChangeFeed.Iterator(base: buffer, owner: TaskOwner(Task {}))
        let marks = MainActorMarks()
        // The first event takes the whole hand-over (the one suspension that may leave the actor).
        _ = try await iterator.next(isolation: #isolation)
        marks.read = 1
        Task { @MainActor in marks.otherWorkRanAt = marks.read }
        while try await iterator.next(isolation: #isolation) != nil { marks.read += 1 }
        #expect(marks.read == 1_000)
        #expect(try #require(marks.otherWorkRanAt) < 1_000, "the other work waited for the whole hand-over")
    }

    @Test("a writer waiting on a full buffer returns when its task is cancelled")
    func cancelledWriter() async throws {
        let buffer = FeedBuffer(limit: 1)
        let writer = Task { await buffer.send([Self.progress(1)], bytes: 1) }
        try await Task.sleep(for: .milliseconds(50))
        writer.cancel()
        await writer.value
        #expect(Self.seqs(try #require(try await buffer.next())) == [1])
    }
}

/// What a main-actor test reads and another main-actor task writes.
@MainActor
final class MainActorMarks {
    var read = 0
    var otherWorkRanAt: Int?
}

/// A count shared between tasks.
final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
