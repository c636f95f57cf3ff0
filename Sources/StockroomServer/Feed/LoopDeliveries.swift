import NIOCore
import Synchronization

/// Wake-ups of parked streams, run on each stream's event loop in slices. NIO runs every task queued
/// on a loop, those queued while it runs included, before it looks at its sockets again: a commit
/// seen by many parked streams would queue all their deliveries at once, and the loop would read no
/// request until all were written. Here a loop takes `slice` wake-ups at a time, and the next
/// slice is scheduled a microsecond ahead, which NIO runs only after its next look at its sockets.
final class LoopDeliveries: Sendable {
    static let slice = 64

    private typealias Wake = (stream: ParkedSSEStream, woke: Bool)

    private struct Queue {
        var wakes: [Wake] = []
        var running = false
    }

    private let queues = Mutex<[ObjectIdentifier: Queue]>([:])

    func wake(_ stream: ParkedSSEStream, woke: Bool, on loop: any EventLoop) {
        let key = ObjectIdentifier(loop)
        let start = queues.withLock { queues in
            queues[key, default: Queue()].wakes.append((stream, woke))
            guard !queues[key]!.running else { return false }
            queues[key]!.running = true
            return true
        }
        if start { loop.execute { self.run(on: loop, key: key) } }
    }

    /// Takes everything queued for the loop at once (wake-ups that arrive meanwhile wait for the next batch).
    private func run(on loop: any EventLoop, key: ObjectIdentifier) {
        let batch = queues.withLock { queues in
            defer { queues[key]!.wakes = [] }
            return queues[key]!.wakes
        }
        deliver(batch[...], on: loop, key: key)
    }

    private func deliver(_ batch: ArraySlice<Wake>, on loop: any EventLoop, key: ObjectIdentifier) {
        for wake in batch.prefix(Self.slice) { wake.stream.wakeOnLoop(wake.woke) }
        let rest = batch.dropFirst(Self.slice)
        if !rest.isEmpty {
            loop.scheduleTask(in: .microseconds(1)) { self.deliver(rest, on: loop, key: key) }
            return
        }
        let more = queues.withLock { queues in
            if queues[key]!.wakes.isEmpty { queues[key]!.running = false }
            return queues[key]!.running
        }
        if more { loop.scheduleTask(in: .microseconds(1)) { self.run(on: loop, key: key) } }
    }
}
