import Foundation
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
    /// Beyond the descriptors open when the server starts (and the database pool's), the server
    /// stops accepting this far below the limit: what opens later (SQLite's readers, an import's
    /// spool file, a log, the runtime's own reads of `/proc`) still finds a descriptor. At the
    /// limit, more than a refused accept fails: libdispatch's pool monitor stops the process when
    /// it cannot open `/proc/<tid>/stat`.
    static let ceilingReserve = 64

    /// How many descriptors the process has open now (nil where the system does not say).
    static func openNow() -> Int? {
        #if os(Linux)
        let folder = "/proc/self/fd"
        #else
        let folder = "/dev/fd"
        #endif
        // Less the listing's own descriptor.
        return (try? FileManager.default.contentsOfDirectory(atPath: folder)).map { $0.count - 1 }
    }

    /// The number of connections at which the server stops accepting: `limit` less the descriptors
    /// in use already (`open`, and `pooled` ones to come: PostgreSQL's connections) and the reserve.
    static func acceptCeiling(limit: Int, open: Int, pooled: Int) -> Int {
        max(16, limit - open - pooled - ceilingReserve)
    }

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
