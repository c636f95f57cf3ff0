import ServiceLifecycle

/// Hands memory that the allocator holds free back to the system every 10 s (glibc's
/// `malloc_trim`). After a burst (a load test, a thousand streams that came and went) glibc keeps
/// the freed pages of its per-thread arenas resident; trimming costs a walk of the free lists, a few
/// milliseconds at most, while the process otherwise stays at its high-water mark.
///
/// It also takes trimming off the request path (`takeOverTrimming`): left to itself, glibc trims an
/// arena's top whenever a `free` leaves more there than its trim threshold (128 KiB until large
/// blocks are freed), which a server's frees do again and again under load (a request's task
/// frames, its buffers), and the next requests fault the same pages back in. So free memory up to `trimThreshold` stays in an arena until this
/// trimmer's next round, and blocks below `mmapThreshold` come from the arenas instead of `mmap`.
struct MemoryTrimmer: Service {
    static let interval: Duration = .seconds(10)

    /// Free memory at the top of an arena that `free` leaves there (glibc's `M_TRIM_THRESHOLD`).
    static let trimThreshold = 8 << 20
    /// Blocks at least this large are mapped on their own (glibc's `M_MMAP_THRESHOLD`). Setting
    /// either threshold stops glibc's own rule of raising both as large blocks are freed, so this
    /// one is set too: the large buffers that rule would have moved into the arenas once freed
    /// (a feed page's, a snapshot chunk's) come from them from the start.
    static let mmapThreshold = 4 << 20

    func run() async throws {
        await repeatUntilShutdown(every: Self.interval) {
            #if canImport(Glibc)
            _ = glibcMallocTrim(0)
            #endif
        }
    }

    /// Sets the thresholds, unless the environment tunes glibc's allocator itself (its `MALLOC_`
    /// variables, `MALLOC_ARENA_MAX` among them, or `glibc.malloc` in `GLIBC_TUNABLES`); returns
    /// whether it did.
    static func takeOverTrimming(environment: [String: String]) -> Bool {
        guard !Self.allocatorTuned(by: environment) else { return false }
        #if canImport(Glibc)
        return glibcMallopt(-3, Int32(mmapThreshold)) == 1 && glibcMallopt(-1, Int32(trimThreshold)) == 1  // M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
        #else
        return false
        #endif
    }

    /// Whether the environment sets any of glibc's allocator tunables.
    static func allocatorTuned(by environment: [String: String]) -> Bool {
        environment.contains { name, value in
            name.hasPrefix("MALLOC_") || (name == "GLIBC_TUNABLES" && value.contains("glibc.malloc."))
        }
    }
}

#if canImport(Glibc)
/// glibc's `malloc_trim(3)`, which its Swift module does not export.
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32

/// glibc's `mallopt(3)`, which its Swift module does not export.
@_silgen_name("mallopt")
private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
#endif
