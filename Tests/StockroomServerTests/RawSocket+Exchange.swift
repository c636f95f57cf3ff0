import Foundation

/// Runs blocking socket I/O on a thread of its own: on one of the few threads of Swift's
/// cooperative pool, it could hold back the server under test, which runs on the same pool.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

extension RawSocket {
    /// Makes a read that gets nothing for 30 s fail instead of hanging the test run.
    func failingStalledReads() -> RawSocket {
        var limit = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        return self
    }

    func write(_ text: String) throws {
        let sent = text.withCString { send(descriptor, $0, strlen($0), 0) }
        guard sent == text.utf8.count else { throw POSIXError(.EIO) }
    }

    /// Exactly `count` bytes.
    func read(count: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: count)
        while bytes.count < count {
            let received = recv(descriptor, &buffer, count - bytes.count, 0)
            if received == 0 { throw POSIXError(.ECONNRESET) }
            if received < 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            bytes += buffer[0..<received]
        }
        return bytes
    }

    /// Everything until the server closes the connection; a read that stalls throws instead
    /// (with `failingStalledReads`, after 30 s).
    func readToClose() throws -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 { return String(decoding: bytes, as: UTF8.self) }
            if count < 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            bytes += buffer[0..<count]
        }
    }

    /// A response head, up to and including its blank line, read a byte at a time so nothing after it is taken.
    func readHead() throws -> String {
        var bytes: [UInt8] = []
        while !bytes.ends(with: Array("\r\n\r\n".utf8)) { bytes += try read(count: 1) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// One unmasked server frame.
    func readFrame() throws -> (opcode: UInt8, payload: [UInt8]) {
        let header = try read(count: 2)
        var length = Int(header[1] & 0x7f)
        if length == 126 {
            let extended = try read(count: 2)
            length = Int(extended[0]) << 8 | Int(extended[1])
        } else if length == 127 {
            length = try read(count: 8).reduce(0) { $0 << 8 | Int($1) }
        }
        return (header[0] & 0x0f, try read(count: length))
    }
}

extension Array where Element: Equatable {
    fileprivate func ends(with suffix: [Element]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
