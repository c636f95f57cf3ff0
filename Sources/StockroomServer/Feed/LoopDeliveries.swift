import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wake-ups of parked streams, run on each stream's event loop in slices. NIO runs every task queued
/// on a loop, those queued while it runs included, before it looks at its sockets again: a commit
/// seen by many parked streams would queue all their deliveries at once, and the loop would read no
/// request until all were written. Here a loop takes `slice` wake-ups at a time, and the next
/// slice is scheduled a microsecond ahead, which NIO runs only after its next look at its sockets.
///
/// Between two slices the loop's thread also yields its core (`sched_yield`) to threads that are
/// ready to run and waiting for it: a fan-out to many streams is bulk work, and what waits behind
/// it is short and latency-bound (a write's answer on another loop or daemon, the client that reads
/// it, the group committer). With nothing else ready the call returns at once. The slice is small
/// enough that a thread woken during a fan-out waits for at most one slice's deliveries.
final class LoopDeliveries: Sendable {
    static let slice = 16

    private let queues = Mutex<[ObjectIdentifier: Queue]>([:])

    /// The queue of `loop`'s wake-ups, made on first use. A stream takes it once, when it starts,
    /// so that a wake-up (one per stream per commit) finds its queue without a lookup.
    func queue(for loop: any EventLoop) -> Queue {
        queues.withLock { queues in
            if let queue = queues[ObjectIdentifier(loop)] { return queue }
            let queue = Queue(loop: loop)
            queues[ObjectIdentifier(loop)] = queue
            return queue
        }
    }

    /// One loop's wake-ups: queued from any thread, delivered on the loop.
    final class Queue: Sendable {
        private struct Wake {
            let stream: ParkedSSEStream
            let woke: Bool
        }

        private struct State {
            var wakes: [Wake] = []
            var running = false
        }

        private let loop: any EventLoop
        private let state = Mutex(State())

        fileprivate init(loop: any EventLoop) {
            self.loop = loop
        }

        func wake(_ stream: ParkedSSEStream, woke: Bool) {
            let start = state.withLock { state in
                state.wakes.append(Wake(stream: stream, woke: woke))
                guard !state.running else { return false }
                state.running = true
                return true
            }
            if start { loop.execute { self.run() } }
        }

        /// Takes everything queued at once (wake-ups that arrive meanwhile wait for the next batch).
        private func run() {
            let batch = state.withLock { state in
                defer { state.wakes = [] }
                return state.wakes
            }
            deliver(batch[...])
        }

        private func deliver(_ batch: ArraySlice<Wake>) {
            for wake in batch.prefix(LoopDeliveries.slice) { wake.stream.wakeOnLoop(wake.woke) }
            let rest = batch.dropFirst(LoopDeliveries.slice)
            if !rest.isEmpty {
                sched_yield()
                loop.scheduleTask(in: .microseconds(1)) { self.deliver(rest) }
                return
            }
            let more = state.withLock { state in
                if state.wakes.isEmpty { state.running = false }
                return state.running
            }
            if more { loop.scheduleTask(in: .microseconds(1)) { self.run() } }
        }
    }
}
