import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTP1

/// Answers `400 invalidRequest` with the contract's body and closes when a request on the
/// connection does not parse (Hummingbird's own answer is a bare 400) or its `Host` is missing,
/// repeated or malformed (`hostProblem`), closes a connection that has
/// not sent a request yet when the server shuts down, and sends `100 Continue` to a request that
/// asks for it (RFC 9110 §10.1.1: curl asks before a body over 1 MiB, a CSV import, and waits a
/// second for it) when its handler is about to read the body (`ContinueEvent`): a request refused
/// by its head alone (no token, a declared length over the limit, no such route) gets its final
/// answer instead, before its client sends a body. Such an answer closes the connection unless the
/// body came all the same, since the server cannot tell whether the client will still send it.
///
/// It answers only when every request before the malformed one has its answer: it counts request
/// heads in and response ends out. A client that pipelined a malformed request behind one still
/// being answered gets Hummingbird's 400 after that answer instead, so answers never cross. A head
/// asking for a WebSocket takes the guard out of the pipeline, which the upgrade then turns into a
/// WebSocket's; later requests on a connection whose upgrade was refused get Hummingbird's 400. A
/// head asking for another upgrade is answered in HTTP/1.1, and its connection closes after it.
/// A malformed body of a request whose head parsed is the request's own error (its handler answers).
/// A `100 Continue` goes out when the handler asks, or, behind requests still being answered,
/// after their answers: an interim answer never lands inside another request's.
///
/// It keeps each request's ``BodyClock``: a body that comes too slowly ends the request's stream
/// with ``BodyClock/TooSlow``, which its handler answers `408 requestTimeout`, and the connection
/// closes after that answer.
///
/// It also keeps HTTP/1's connection terms (RFC 9112 §9.3), which Hummingbird's request loop reads
/// only from a `Connection` header of exactly `close`:
/// - a request whose connection ends with it (`Connection` with a `close` token in any case, or
///   HTTP/1.0 without `keep-alive`) reaches the loop marked `Connection: close`, so the connection
///   closes after its answer, which says `Connection: close`;
/// - an HTTP/1.0 request is answered in HTTP/1.0, so the encoder never frames a body in chunks,
///   which HTTP/1.0 does not have (RFC 9112 §6.1): a body of unknown length ends with the connection.
///   One that asked for `keep-alive` keeps its connection when its answer has a `Content-Length`
///   (or no body), and the answer says `Connection: keep-alive`.
final class MalformedRequestGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Request heads passed on, and response ends passed out: equal when every request is answered.
    private var requests = 0
    private var answers = 0
    private var closing = false
    /// The requests (by their number in `requests`) that asked for `100 Continue` and have not had
    /// it or their final answer.
    private var continuesAsked: [Int] = []
    /// The requests (by their number) owed a `100 Continue` once those before them are answered.
    private var continuesOwed: [Int] = []
    /// Request ends passed on: a request numbered above this one has not sent its whole body.
    private var requestEnds = 0
    /// The requests (by their number in `requests`) whose answers HTTP/1.1's keep-alive does not fit, in order.
    private var terms: [(request: Int, terms: Terms)] = []
    /// The answer in progress is HTTP/1.0's: its body goes unframed (see `ProtocolSwitchHandler.writeParkedChunks`).
    private(set) var answeringHTTP10 = false
    /// The answer in progress ends the connection, which this guard closes once the answer is out.
    private var closeAfterAnswer = false
    /// A request's `Host` was refused: nothing more on the connection is read.
    private var refusedHost = false
    /// The time the body of the last request whose head came in may still take.
    private var clock: BodyClock
    /// The connection was refused and its answer written: what comes in is dropped until it closes.
    private var lingering = false

    init(bodyTimeout: Duration, bodyMinBytesPerSecond: Int) {
        clock = BodyClock(grace: bodyTimeout, minBytesPerSecond: bodyMinBytesPerSecond)
    }

    /// What a request's answer needs beyond HTTP/1.1 with keep-alive.
    enum Terms {
        /// HTTP/1.1 whose connection ends with this answer.
        case close
        /// HTTP/1.0 whose connection ends with this answer.
        case http10
        /// HTTP/1.0 that asked to keep its connection.
        case http10KeepAlive
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refusedHost, !lingering else { return }  // the refused request's body, and anything after it
        let part = unwrapInboundIn(data)
        guard case .head(var head) = part else {
            switch part {
            case .body(let bytes): clock.body(bytes.readableBytes)
            case .end:
                requestEnds += 1
                clock.stop()
            case .head: break
            }
            context.fireChannelRead(data)
            return
        }
        if let problem = Self.hostProblem(head) {
            // Never passed on: its answer is the 400, after those of the requests before it.
            refusedHost = true
            refuse(context, HTTPParserError.invalidHeaderToken, answer: APIError(.invalidRequest, problem))
            return
        }
        requests += 1
        let asksToContinue = Self.asksToContinue(head)
        if asksToContinue { continuesAsked.append(requests) }
        clock.head(waitsToContinue: asksToContinue)
        let http10 = head.version.major == 1 && head.version.minor == 0
        let upgrade = head.headers.contains(name: "upgrade")
        // An upgrade to anything but a WebSocket (h2c, which curl --http2 asks for) is answered as
        // HTTP/1.1, as RFC 9110 §7.8 allows; but the HTTP decoder stops reading the connection
        // after a head that asks to upgrade, so that answer is its last.
        let otherUpgrade = upgrade && !Self.asksForWebSocket(head)
        let keepAlive = head.isKeepAlive && !otherUpgrade
        if http10 || !keepAlive {
            terms.append((requests, !keepAlive ? (http10 ? .http10 : .close) : .http10KeepAlive))
        }
        if keepAlive {
            context.fireChannelRead(data)
        } else {
            // Hummingbird's loop ends a connection on this exact value only.
            head.headers.replaceOrAdd(name: "Connection", value: "close")
            context.fireChannelRead(wrapInboundOut(.head(head)))
        }
        if upgrade && !otherUpgrade {
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    /// Whether an `Upgrade` header names `websocket` (in any case, among other protocols).
    static func asksForWebSocket(_ head: HTTPRequestHead) -> Bool {
        head.headers[canonicalForm: "upgrade"].contains { $0.lowercased() == "websocket" }
    }

    /// The handler of the request being answered is about to read its body: its `100 Continue`,
    /// if it asked for one and its body has not come yet.
    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is ContinueEvent else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        promise?.succeed()
        // Hummingbird answers a connection's requests one after another: the handler's is the first
        // unanswered one.
        let request = answers + 1
        if request == requests {
            clock.continued()
            armClock(context)
        }
        guard let index = continuesAsked.firstIndex(of: request) else { return }
        continuesAsked.remove(at: index)
        guard requestEnds < request else { return }  // the body came without waiting for it
        if answers == request - 1 { writeContinue(context) } else { continuesOwed.append(request) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if let first = continuesAsked.first, first == answers + 1, case .head(let head) = unwrapOutboundIn(data), head.status.code >= 200 {
            // A final answer to a request whose handler never asked for its body.
            continuesAsked.removeFirst()
            if requestEnds < first {
                writeWithoutTheBody(context, head, promise: promise)
                return
            }
        }
        switch unwrapOutboundIn(data) {
        case .end:
            answers += 1
            answeringHTTP10 = false
            guard !closeAfterAnswer else {
                closeAfterAnswer = false
                closing = true
                let written = context.eventLoop.makePromise(of: Void.self)
                if let promise { written.futureResult.cascade(to: promise) }
                context.writeAndFlush(data, promise: written)
                written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
                return
            }
            context.write(data, promise: promise)
            if let next = continuesOwed.first, next == answers + 1 {
                continuesOwed.removeFirst()
                writeContinue(context)
            }
        case .head where !terms.isEmpty && terms[0].request == answers + 1:
            writeHead(context, data, promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }

    /// Writes the final answer's head of a request whose client may still be waiting to send its
    /// body: the connection ends with this answer, as the server cannot tell where the next
    /// request would start.
    private func writeWithoutTheBody(_ context: ChannelHandlerContext, _ head: HTTPResponseHead, promise: EventLoopPromise<Void>?) {
        if !terms.isEmpty && terms[0].request == answers + 1 {
            terms.removeFirst()  // HTTP/1.0 never asks to continue: its terms could only be to close
        }
        var head = head
        head.headers.replaceOrAdd(name: "Connection", value: "close")
        closeAfterAnswer = true
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }

    /// Writes the head of an answer whose request is in `terms`, with what its terms need.
    private func writeHead(_ context: ChannelHandlerContext, _ data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data), head.status.code >= 200 else {
            context.write(data, promise: promise)
            return
        }
        let terms = self.terms.removeFirst().terms
        switch terms {
        case .close:
            head.headers.replaceOrAdd(name: "Connection", value: "close")
        case .http10, .http10KeepAlive:
            head.version = .http1_0
            answeringHTTP10 = true
            head.headers.remove(name: "transfer-encoding")
            let delimited = head.headers.contains(name: "content-length") || !head.status.mayHaveResponseBody
            if terms == .http10KeepAlive && delimited {
                head.headers.replaceOrAdd(name: "Connection", value: "keep-alive")
            } else {
                head.headers.replaceOrAdd(name: "Connection", value: "close")
                // Hummingbird's loop was not told (the request kept its connection): the guard closes it.
                closeAfterAnswer = terms == .http10KeepAlive
            }
        }
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }

    /// What is wrong with the request's `Host` (RFC 9112 §3.2: a server answers 400 to an HTTP/1.1
    /// request without one, to any request with more than one, and to one whose value is not
    /// `host[:port]`), nil when nothing is. A proxy or a cache in front that read another `Host`
    /// than this server would otherwise disagree with it about which site was asked.
    static func hostProblem(_ head: HTTPRequestHead) -> String? {
        var host: String?
        for (name, value) in head.headers where isHost(name) {
            guard host == nil else { return "a request has one Host header, not several" }
            host = value
        }
        guard let host else {
            return head.version.major == 1 && head.version.minor == 0 ? nil : "an HTTP/1.1 request needs a Host header"
        }
        // uri-host [ ":" port ]: a name's, an IPv4 address's or a bracketed IPv6 address's characters,
        // read from the string's own bytes (its UTF-8 view a byte at a time costs ten times more).
        var text = host
        let valid = text.withUTF8 { bytes in
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "%"), UInt8(ascii: "!"),
                    UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"),
                    UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "["),
                    UInt8(ascii: "]"):
                    continue
                default:
                    return false
                }
            }
            return true
        }
        return valid ? nil : "Host must be host[:port]"
    }

    /// Whether a header's name is `Host`, in any case, without making a lowered copy.
    private static func isHost(_ name: String) -> Bool {
        guard name.utf8.count == 4 else { return false }
        var name = name
        return name.withUTF8 { bytes in
            bytes.count == 4 && bytes[0] | 0x20 == UInt8(ascii: "h") && bytes[1] | 0x20 == UInt8(ascii: "o")
                && bytes[2] | 0x20 == UInt8(ascii: "s") && bytes[3] | 0x20 == UInt8(ascii: "t")
        }
    }

    /// An HTTP/1.1 request with `Expect: 100-continue` and a body to come (a length over 0, or chunked).
    static func asksToContinue(_ head: HTTPRequestHead) -> Bool {
        // A GET or HEAD carries no body here: their heads (most of them) are not searched.
        guard head.method != .GET, head.method != .HEAD, head.version.major == 1, head.version.minor >= 1,
            head.headers.contains(name: "expect"),
            head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" })
        else { return false }
        if head.headers.contains(name: "transfer-encoding") { return true }
        return head.headers.first(name: "content-length").flatMap { Int($0) }.map { $0 > 0 } ?? false
    }

    private func writeContinue(_ context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, requests == 0, !closing {
            closing = true
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if lingering, error is ByteToMessageDecoderError {
            return  // what the client still sends after its refusal: read and dropped (see `refuse`)
        }
        guard let error = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        if error == .headerOverflow {
            // The decoder's limits (Hummingbird's defaults) count the request line and the headers.
            let limits = HTTP1Channel.Configuration.DecoderConfiguration()
            let message =
                "the request line and headers are too large: at most \(limits.maxHeaderListSize / 1024) KiB together and \(limits.maxHeaderFieldCount) headers"
            refuse(context, error, answer: APIError(http: HTTPError(.requestHeaderFieldsTooLarge, message: message)))
        } else {
            refuse(context, error, answer: APIError(.invalidRequest, "the request is not valid HTTP/1.1"))
        }
    }

    /// Answers `answer` (`400 invalidRequest`, or `431`) and closes, once every request before has
    /// its answer; behind one still being answered, hands `error` on, for Hummingbird's 400 after it.
    ///
    /// The close lingers, as a web server's does: the answer is followed by the end of the output,
    /// and what the client still sends is read and dropped until it closes its side, or for
    /// `lingerLimit` at most. Closed at once, with the client's bytes unread, the connection would
    /// be reset, and a client still sending (a head of megabytes) would get the reset instead of
    /// the answer.
    private func refuse(_ context: ChannelHandlerContext, _ error: HTTPParserError, answer: APIError) {
        guard !closing, requests == answers else {
            context.fireErrorCaught(error)
            return
        }
        closing = true
        clock.stop()
        let body = ByteBuffer(string: answer.json())
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        headers.add(name: "Connection", value: "close")
        let status = HTTPResponseStatus(statusCode: Int(answer.status.code), reasonPhrase: answer.status.reasonPhrase)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { [self] result in
            guard case .success = result else {
                context.close(promise: nil)
                return
            }
            lingering = true
            context.close(mode: .output, promise: nil)
            context.eventLoop.assumeIsolated().scheduleTask(in: Self.lingerLimit) { context.close(promise: nil) }
            context.read()
        }
    }

    /// How long a refused connection goes on reading what its client still sends.
    static let lingerLimit = TimeAmount.seconds(2)

    func handlerRemoved(context: ChannelHandlerContext) {
        clock.stop()
    }

    func read(context: ChannelHandlerContext) {
        if clock.receiving {
            clock.readAsked()
            armClock(context)
        }
        context.read()
    }

    /// Schedules the body clock's check, if it runs without one.
    private func armClock(_ context: ChannelHandlerContext) {
        guard clock.wantsCheck else { return }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        clock.arm(on: context.eventLoop) {
            let (handler, context) = bound.value
            handler.clockDue(context)
        }
    }

    /// The body clock's check: a body over its allowance ends its request's stream with
    /// ``BodyClock/TooSlow``, and the request's answer, if it has none yet, closes the connection.
    private func clockDue(_ context: ChannelHandlerContext) {
        guard clock.expired() else {
            armClock(context)
            return
        }
        if answers < requests {
            if let last = terms.last, last.request == requests {
                if last.terms == .http10KeepAlive { terms[terms.count - 1].terms = .http10 }
            } else {
                terms.append((requests, .close))
            }
        }
        context.fireErrorCaught(BodyClock.TooSlow(grace: clock.grace, minBytesPerSecond: clock.minBytesPerSecond))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if lingering {
            context.read()  // on to the client's end, whatever reads the rest of the pipeline asks for
            return
        }
        context.fireChannelReadComplete()
    }
}

/// Sent down a connection's pipeline by a handler about to read its request's body
/// (`Request.continueIfAsked`): `MalformedRequestGuard` sends the `100 Continue` the request asked for.
struct ContinueEvent: Sendable {}
