import Foundation
import Hummingbird
import StockroomWire
import StockroomStorage

/// The authenticator for bearer tokens: verifies the secret against the token cache
/// (a revoked token is refused on its next request). No token at all leaves the request
/// unauthenticated for `CallerContext` to refuse; a token that does not verify is `401` here.
/// Streaming routes also accept `?access_token=`, since browsers cannot set headers there.
struct BearerTokenAuthenticator: RouterMiddleware {
    typealias Context = AppRequestContext

    let database: any Storage
    /// The paths that accept `?access_token=`.
    var queryTokenPaths: Set<String> = []

    /// What hummingbird-auth's `AuthenticatorMiddleware.handle` does, written here so that a
    /// request's async frames are this one and `next`'s (that `handle` calls `authenticate` with a
    /// frame of its own): the context's `identity` set from a verified token.
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let secret = try bearerSecret(request) else { return try await next(request, context) }
        guard let token = try await database.authenticate(secret: secret) else { throw Self.refused() }
        return try await next(request, Self.context(context, identity: token))
    }

    @inline(never)
    private static func context(_ context: Context, identity: TokenInfo) -> Context {
        var context = context
        context.identity = identity
        return context
    }

    @inline(never)
    private static func refused() -> APIError {
        APIError.unauthorized("invalid or revoked token")
    }

    /// Out of line: inlined into `handle`, its temporaries would join the async frame every request allocates.
    @inline(never)
    private func bearerSecret(_ request: Request) throws -> String? {
        if let secret = Self.headerSecret(request) { return secret }
        if queryTokenPaths.contains(request.uri.path), let secret = try request.query("access_token"), !secret.isEmpty {
            return secret
        }
        return nil
    }

    /// The secret of an `Authorization: Bearer` header, if the request has one. The scheme is
    /// matched in any case (RFC 9110), which hummingbird-auth's `headers.bearer` does not do.
    static func headerSecret(_ request: Request) -> String? {
        // Several fields are joined as the subscript joins them (and then refused).
        guard var header = request.headers.value(of: .authorization) else { return nil }
        // Spaces and tabs around the secret are dropped (the HTTP parser leaves those inside the
        // value). By hand on the contiguous bytes, not with Foundation's `trimmingCharacters` or by
        // slicing `String.UTF8View` generically: this runs on every authenticated request.
        return header.withUTF8 { bytes -> String? in
            let scheme = "bearer ".utf8
            guard bytes.count > scheme.count, zip(bytes, scheme).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
            let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            var start = scheme.count
            var end = bytes.count
            while start < end, isBlank(bytes[start]) { start += 1 }
            while end > start, isBlank(bytes[end - 1]) { end -= 1 }
            guard start < end else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }
}
