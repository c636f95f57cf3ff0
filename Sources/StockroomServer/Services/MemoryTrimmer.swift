import ServiceLifecycle

/// Hands memory that the allocator holds free back to the system every 10 s (glibc's
/// `malloc_trim`). After a burst (a load test, a thousand streams that came and went) glibc keeps
/// the freed pages of its per-thread arenas resident; trimming costs a walk of the free lists, a few
/// milliseconds at most, while the process otherwise stays at its high-water mark.
struct MemoryTrimmer: Service {
    static let interval: Duration = .seconds(10)

    func run() async throws {
        await repeatUntilShutdown(every: Self.interval) {
            #if canImport(Glibc)
            _ = glibcMallocTrim(0)
            #endif
        }
    }
}

#if canImport(Glibc)
/// glibc's `malloc_trim(3)`, which its Swift module does not export.
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32
#endif
