import Testing

import StockroomStorage
@testable import StockroomStore

@Suite("Idempotency keys in flight")
struct InFlightKeysTests {
    @Test func aKeyHeldByARunningRequestIsRequestInProgressUntilReleased() throws {
        let keys = InFlightKeys()
        let key = IdempotencyKey(user: "erin", scope: .items, key: "k")
        try keys.claim(key)
        #expect(throws: StoreError.self) { try keys.claim(key) }
        // Another user's or another scope's key is independent.
        try keys.claim(IdempotencyKey(user: "otto", scope: .items, key: "k"))
        try keys.claim(IdempotencyKey(user: "erin", scope: .client("phone"), key: "k"))
        keys.release(key)
        try keys.claim(key)
    }
}
