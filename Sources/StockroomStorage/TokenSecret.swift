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
        Data(SHA256.hash(data: Data(secret.utf8)))
    }

    private static func randomBase64URL(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64URLEncodedString()
    }
}
