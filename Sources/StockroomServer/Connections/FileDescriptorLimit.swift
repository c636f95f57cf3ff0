import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-file limit, raised to its hard limit at startup: every connection is a file
/// descriptor, and at the soft default of 1,024 a few idle clients leave the server deaf.
enum FileDescriptorLimit {
    /// File descriptors kept for SQLite, logs and the listener beyond the connection cap.
    static let reserve = 128
    /// Below the limit by this much the server stops accepting (SQLite's files stay openable).
    static let ceilingReserve = 32

    /// Raises the soft limit to the hard one (logging both) and returns the limit now in force.
    @discardableResult
    static func raise(logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        let soft = limit.rlim_cur
        var target = limit.rlim_max
        if target == rlim_t.max { target = 1 << 20 }  // RLIM_INFINITY
        if target > soft {
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) != 0 { target = soft }
        }
        logger.info("open-file limit", metadata: ["soft": "\(soft)", "hard": "\(limit.rlim_max)", "now": "\(target)"])
        return Int(min(target, rlim_t(Int32.max)))
    }
}
