// The operations of StoreBenchmarks under `valgrind --tool=callgrind`, for instruction counts where
// no hardware counter is readable. Each operation is set up, warmed up, and then run `iterations`
// times between two dumps of callgrind's counters (every thread's), so each dump file holds
// exactly those runs. Benchmarks/callgrind/store-counts.sh runs it and divides.
//
// Outside valgrind it runs the same loops and prints only that it measured nothing.
import CCallgrind
import StoreOperations

/// Runs `operation` `warmup` times, then `iterations` times inside one callgrind dump named `name`.
func measure(_ name: String, iterations: Int, warmup: Int = 20, _ operation: () async throws -> Void) async throws {
    for _ in 0..<warmup { try await operation() }
    // A dump, not a zero: callgrind's zero left the counters inconsistent (the next dump's
    // `summary:` and `totals:` disagreed); a dump resets every counter.
    ccallgrind_dump("before \(name)")
    for _ in 0..<iterations { try await operation() }
    ccallgrind_dump("\(name) x\(iterations)")
    print("\(name)\t\(iterations) iterations")
}

let write = try await StoreFixture()
try await measure("store.updateItem", iterations: 50) { try await write.updateItem() }
try await measure("store.saveCycle", iterations: 20) { try await write.saveCycle() }
try await measure("token.authenticate", iterations: 500) { try await write.authenticate() }
let presence = PresenceTicks(write, devices: 100)
try await measure("store.presenceTick100", iterations: 20) { try await presence.tick() }

let encoding = ChangeEncoding()
var bytes = 0
try await measure("encode.change", iterations: 1_000) { bytes &+= encoding.encodeChange(seq: Int64(bytes)) }
try await measure("encode.itemJSONEncoder", iterations: 200) { bytes &+= try encoding.encodeItemWithJSONEncoder() }

for subscribers in [1, 100] {
    let fanOut = FanOut(try await StoreFixture(), subscribers: subscribers)
    try await measure("feed.fanOut\(subscribers)", iterations: 20) { try await fanOut.commitAndDeliver() }
    await fanOut.stop()
}
StoreFixture.removeAll()
if ccallgrind_running() == 0 { print("not under valgrind: nothing was counted (\(bytes) bytes encoded)") }
