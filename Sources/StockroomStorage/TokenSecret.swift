import Crypto
import Foundation
import StockroomCore
import StockroomWire

/// How a token is made and recognised, the same in every store: a random id and secret, of which
/// the store keeps only the SHA-256 of the secret.
package enum TokenSecret {
    /// A new token for `user`, and the hash of its secret to store.
    package static func generate(user: UserID, role: Role) -> (token: IssuedToken, secretHash: Data) {
        let secret = "sr_" + randomBase64URL(bytes: 32)
        let info = TokenInfo(
            id: TokenID("tok_" + randomBase64URL(bytes: 9)), user: user, role: role, createdAt: Timestamp.now(), revokedAt: nil)
        return (IssuedToken(info: info, secret: secret), hash(secret))
    }

    /// What the store keeps of a secret.
    package static func hash(_ secret: String) -> Data {
        digest(secret).data
    }

    /// The SHA-256 of a secret, hashed from the string's own bytes into four words: what
    /// `TokenCache` is keyed by, taken on every authenticated request (no `Data` on the way).
    package static func digest(_ secret: String) -> SecretDigest {
        var secret = secret
        return secret.withUTF8 { bytes in
            SHA256.hash(data: UnsafeRawBufferPointer(bytes)).withUnsafeBytes { digest in
                SecretDigest(
                    a: digest.loadUnaligned(fromByteOffset: 0, as: UInt64.self), b: digest.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                    c: digest.loadUnaligned(fromByteOffset: 16, as: UInt64.self), d: digest.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
            }
        }
    }

    private static func randomBase64URL(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64URLEncodedString()
    }
}

/// A secret's SHA-256, as four words in the digest's byte order.
package struct SecretDigest: Hashable, Sendable {
    let a: UInt64, b: UInt64, c: UInt64, d: UInt64

    /// The digest's 32 bytes, as the stores keep them.
    package var data: Data {
        withUnsafeBytes(of: (a, b, c, d)) { Data($0) }
    }
}
