import StockroomWire
import Foundation
import Synchronization

/// Verified tokens by the hash of their secret, valid for one token generation: the first lookup
/// after any revocation (a new generation) empties the cache, so nothing revoked is ever served
/// from it. Only live tokens are kept, and at most `capacity` of them.
package final class TokenCache: Sendable {
    private struct State {
        var generation: Int64 = -1
        var tokens: [SecretDigest: TokenInfo] = [:]
    }

    private let state = Mutex(State())
    private let capacity: Int

    package init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    /// The token verified for `hash` in `generation`, if any.
    package func token(hash: SecretDigest, generation: Int64) -> TokenInfo? {
        state.withLock { state in
            if generation > state.generation {
                state.generation = generation
                state.tokens.removeAll(keepingCapacity: true)
            }
            // A reader on an older snapshot than the cache's finds nothing and keeps nothing.
            return generation == state.generation ? state.tokens[hash] : nil
        }
    }

    /// Keeps a token just read as live in `generation`.
    package func keep(_ token: TokenInfo, hash: SecretDigest, generation: Int64) {
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.tokens.count >= capacity { state.tokens.removeAll(keepingCapacity: true) }
            state.tokens[hash] = token
        }
    }
}
