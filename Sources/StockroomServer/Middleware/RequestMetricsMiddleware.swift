import Hummingbird
import Metrics
import Synchronization

/// The request metrics of Hummingbird's `MetricsMiddleware`, under the same names and labels
/// (`http_server_active_requests`, `hb_requests`, `http_server_request_duration`, `hb_request_errors`),
/// recorded differently in two ways:
/// - An answer whose length is known (every JSON answer) is counted when the handler returns it.
///   Hummingbird's middleware wraps every body in a closure that records after the body is written,
///   which turns the one-buffer answer into a streamed one (head, body and end written separately).
///   Only streamed bodies (SSE, snapshots) are wrapped, so the gauge still counts an open stream.
/// - A WebSocket upgrade is counted once it is decided, under `101` when accepted and under the
///   refusal's status otherwise (its close code is 4000 plus that status), so that refusals reach
///   the same error series as other answers. It does not raise the active-request gauge: an upgraded
///   connection's response never writes a body, so the gauge would stay raised for each WebSocket for
///   good. Open WebSockets are in `stockroom_feed_subscribers{transport="ws"}`.
/// - `hb_request_errors` counts every answer of status 400 or more, and only those. Hummingbird's
///   counts the errors that reach it thrown, but here `ErrorMiddleware`, inside this one, has made
///   every error an answer by then.
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    private let cache = Cache()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let upgrade = context.webSocketUpgrade {
            let start = ContinuousClock.now
            let response = try await next(request, context)
            decided(upgrade, request: request, context: context, start: start, answered: response.status)
            return response
        }
        let start = ContinuousClock.now
        let active = cache.activeRequests(request.method)
        active.increment()
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            failed(error, request: request, context: context, active: active)
            throw error
        }
        return answered(response, request: request, context: context, start: start, active: active)
    }

    /// A request that threw: counted under the error's status. Synchronous and out of line, as
    /// `answered`.
    @inline(never)
    private func failed(_ error: any Error, request: Request, context: Context, active: Meter) {
        let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
        let metrics = cache.endpoint(.init(route: context.endpointPath ?? "NotFound", method: request.method, status: status))
        metrics.requests.increment()
        metrics.errors?.increment()
        active.decrement()
    }

    /// A WebSocket upgrade request, decided: recorded under `101` when accepted (the WebSocket route
    /// accepts only a valid handshake), else under the status it is refused with.
    @inline(never)
    private func decided(
        _ upgrade: WebSocketUpgrade, request: Request, context: Context, start: ContinuousClock.Instant, answered: HTTPResponse.Status
    ) {
        let status: HTTPResponse.Status =
            switch upgrade.decision {
            case .accept?: .switchingProtocols
            case .refuse(let error)?: error.status
            case nil: answered
            }
        cache.endpoint(.init(route: context.endpointPath ?? "NotFound", method: request.method, status: status)).record(since: start)
    }

    /// An answered request: recorded now when its body's length is known, else once its body is
    /// written (a stream's, when it ends). Synchronous and out of line, so that its locals live on
    /// the thread's stack while it runs, not in `handle`'s async frame, which every request allocates.
    @inline(never)
    private func answered(_ response: Response, request: Request, context: Context, start: ContinuousClock.Instant, active: Meter) -> Response {
        var response = response
        let metrics = cache.endpoint(.init(route: context.endpointPath ?? "Unknown", method: request.method, status: response.status))
        guard response.body.contentLength == nil else {
            metrics.record(since: start)
            active.decrement()
            return response
        }
        let body = response.body
        response.body = ResponseBody { writer in
            let answered: @Sendable () -> Void = {
                metrics.record(since: start)
                active.decrement()
            }
            do {
                try await body.write(writer)
            } catch let detached as StreamDetached {
                // A parked SSE stream goes on without this task: it is answered when its connection closes.
                detached.channel.closeFuture.whenComplete { _ in answered() }
                throw detached
            } catch {
                answered()
                throw error
            }
            answered()
        }
        return response
    }

    /// The metric handles of each method and of each route, method and status, made once: the
    /// metrics factory's own lookup by label and dimensions costs more than a dictionary here.
    final class Cache: Sendable {
        struct EndpointKey: Hashable {
            let route: String
            let method: HTTPRequest.Method
            let status: HTTPResponse.Status
        }

        struct EndpointMetrics: Sendable {
            let requests: Counter
            let duration: Metrics.Timer
            /// For a status of 400 or more; nil otherwise, so that `/metrics` lists no error series for
            /// answers that were not errors.
            let errors: Counter?

            init(_ key: EndpointKey) {
                let method = key.method.rawValue
                let status = String(key.status.code)
                requests = Counter(
                    label: "hb.requests",
                    dimensions: [("http.route", key.route), ("http.request.method", method), ("http.response.status_code", status)])
                duration = Metrics.Timer(
                    label: "http.server.request.duration",
                    dimensions: [("http.route", key.route), ("http.request.method", method), ("http.response.status_code", status)],
                    preferredDisplayUnit: .seconds)
                errors =
                    key.status.code >= 400
                    ? Counter(label: "hb.request.errors", dimensions: [("http.route", key.route), ("http.request.method", method), ("error.type", status)])
                    : nil
            }

            func record(since start: ContinuousClock.Instant) {
                requests.increment()
                errors?.increment()
                let elapsed = (ContinuousClock.now - start).components
                duration.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
            }
        }

        private let meters = Mutex<[HTTPRequest.Method: Meter]>([:])
        private let endpoints = Mutex<[EndpointKey: EndpointMetrics]>([:])

        func activeRequests(_ method: HTTPRequest.Method) -> Meter {
            meters.withLock { meters in
                if let meter = meters[method] { return meter }
                let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method.rawValue)])
                meters[method] = meter
                return meter
            }
        }

        func endpoint(_ key: EndpointKey) -> EndpointMetrics {
            endpoints.withLock { endpoints in
                if let metrics = endpoints[key] { return metrics }
                let metrics = EndpointMetrics(key)
                endpoints[key] = metrics
                return metrics
            }
        }
    }
}
