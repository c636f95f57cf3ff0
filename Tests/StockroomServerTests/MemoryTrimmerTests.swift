import Testing

@testable import StockroomServer

/// `MemoryTrimmer.takeOverTrimming`: glibc's thresholds set by the server, unless the environment
/// tunes the allocator itself.
@Suite("The allocator's trimming taken over")
struct MemoryTrimmerTests {
    @Test(arguments: [
        ["MALLOC_TRIM_THRESHOLD_": "1048576"],
        ["MALLOC_MMAP_THRESHOLD_": "131072", "PATH": "/usr/bin"],
        ["MALLOC_TOP_PAD_": "0"],
        ["MALLOC_ARENA_MAX": "2"],
        ["GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=4096:glibc.malloc.tcache_count=32"],
    ])
    func anEnvironmentThatTunesTheAllocatorKeepsItsSettings(environment: [String: String]) {
        #expect(MemoryTrimmer.allocatorTuned(by: environment))
        #expect(!MemoryTrimmer.takeOverTrimming(environment: environment))
    }

    @Test(arguments: [
        [:],
        ["PATH": "/usr/bin", "LOG_LEVEL": "info", "MALLOC": "x", "MALLOCATOR_": "y"],
        ["GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=4096"],
    ])
    func otherwiseTheServerSetsTheThresholds(environment: [String: String]) {
        #expect(!MemoryTrimmer.allocatorTuned(by: environment))
        #if canImport(Glibc)
        #expect(MemoryTrimmer.takeOverTrimming(environment: environment))
        #endif
    }

    @Test func theTrimThresholdHoldsTheLargestBlockAnArenaServes() {
        #expect(MemoryTrimmer.trimThreshold >= 2 * MemoryTrimmer.mmapThreshold)
    }
}
