import Foundation
import StockroomStorage
import Testing

/// What the stores keep of a token's secret: its SHA-256, byte for byte, however it is taken.
@Suite("Token secrets")
struct TokenSecretTests {
    @Test("the hash a store keeps is the secret's SHA-256, and the cache's digest names the same bytes")
    func theHashIsTheSecretsSHA256() {
        // `printf %s sr_test-secret | sha256sum`
        let expected = "e5178d4986ae3bd2ef06edf5a87463015a6aa2583afec1c97b7558f8ee22dedd"
        let hash = TokenSecret.hash("sr_test-secret")
        #expect(hash.map { String(format: "%02x", $0) }.joined() == expected)
        #expect(TokenSecret.digest("sr_test-secret").data == hash)
        #expect(TokenSecret.digest("sr_test-secret") == TokenSecret.digest(String("sr_test-secret-".dropLast())))
        #expect(TokenSecret.digest("sr_test-secret") != TokenSecret.digest("sr_test-secreT"))
    }
}
