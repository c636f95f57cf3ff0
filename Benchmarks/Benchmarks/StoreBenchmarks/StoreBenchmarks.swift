// The store's costs per operation (issue #8): the write path, the token check, one change's
// encoding and a feed fan-out, each on the public API the server calls, on a real SQLite file.
//
//   swift package --package-path Benchmarks --scratch-path Benchmarks/.build-bench benchmark
//
// Instructions come from the kernel's hardware counter (perf_event_open) and read 0 where there is
// none, as in a VM without a virtual PMU; `StoreCounts` under callgrind counts them there (see
// Benchmarks/README.md). Malloc counts come from the MallocInterposer trait and count every thread.
import Benchmark
import StoreOperations

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.instructions, .mallocCountTotal, .wallClock],
        warmupIterations: 20,
        maxDuration: .seconds(5),
        maxIterations: 2_000
    )

    // Nothing: what the harness itself counts per iteration (subtract it from the figures below).
    Benchmark("Empty iteration (the harness's own count)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(0) }
    }

    // The write path, at synchronous=FULL (one fsync per commit, as the server's default).
    Benchmark("Store: updateItem (PUT)") { benchmark, fixture in
        for _ in benchmark.scaledIterations { try await fixture.updateItem() }
    } setup: {
        try await StoreFixture()
    } teardown: {
        StoreFixture.removeAll()
    }

    Benchmark("Store: save cycle (openEdit, updateDraft, save)") { benchmark, fixture in
        for _ in benchmark.scaledIterations { try await fixture.saveCycle() }
    } setup: {
        try await StoreFixture()
    } teardown: {
        StoreFixture.removeAll()
    }

    // The presence service's tick: a second in which 100 devices each sent a request.
    Benchmark("Store: presence tick of 100 devices") { benchmark, ticks in
        for _ in benchmark.scaledIterations { try await ticks.tick() }
    } setup: {
        PresenceTicks(try await StoreFixture(), devices: 100)
    } teardown: {
        StoreFixture.removeAll()
    }

    // The token check of every authenticated request (a cached token).
    Benchmark("Token check: authenticate (cached)") { benchmark, fixture in
        for _ in benchmark.scaledIterations { try await fixture.authenticate() }
    } setup: {
        try await StoreFixture()
    } teardown: {
        StoreFixture.removeAll()
    }

    // One change's encoding: the item's JSON and the Change object around it.
    let encoding = ChangeEncoding()
    Benchmark("Encode one change (JSONWriter)") { benchmark in
        for index in benchmark.scaledIterations { blackHole(encoding.encodeChange(seq: Int64(index) + 1)) }
    }
    Benchmark("Encode one item (JSONEncoder, for comparison)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try encoding.encodeItemWithJSONEncoder()) }
    }

    // A feed fan-out: one commit (an updateItem) delivered to N subscribers.
    for subscribers in [1, 100] {
        Benchmark("Feed fan-out: one commit to \(subscribers) subscriber\(subscribers == 1 ? "" : "s")") { benchmark, fanOut in
            for _ in benchmark.scaledIterations { try await fanOut.commitAndDeliver() }
        } setup: {
            FanOut(try await StoreFixture(), subscribers: subscribers)
        } teardown: {
            StoreFixture.removeAll()
        }
    }
}
