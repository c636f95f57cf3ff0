import Foundation
import Synchronization

/// Messages a WebSocket handler collected.
final class ReceivedMessages: Sendable {
    private let messages = Mutex<[String]>([])
    func append(_ text: String) { messages.withLock { $0.append(text) } }
    var count: Int { messages.withLock { $0.count } }
    var all: [String] { messages.withLock { $0 } }
}

/// A raw TCP client with a tiny receive buffer: sends one request, then reads only when told to.
final class RawSocket {
    let descriptor: Int32

    init(port: Int, path: String, raw: String? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var size: Int32 = 4096
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            // The real reason (a refusal, or EMFILE in this process, say), not always "refused".
            // (deinit closes the descriptor: every property is set, so it runs when init throws.)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        let request = raw ?? "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        _ = request.withCString { send(descriptor, $0, strlen($0), 0) }
    }

    /// Reads everything until the peer closes; returns how many bytes came.
    func readUntilClosed() throws -> Int {
        try Self.readUntilClosed(descriptor)
    }

    /// Reads `descriptor` until the peer closes; returns how many bytes came.
    static func readUntilClosed(_ descriptor: Int32) throws -> Int {
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 { return total }
            if count < 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            total += count
        }
    }

    /// Makes the close a reset (`SO_LINGER` of 0): once this socket is released, the peer's next
    /// read fails with `ECONNRESET`.
    func resetOnClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }

    deinit { close(descriptor) }
}
