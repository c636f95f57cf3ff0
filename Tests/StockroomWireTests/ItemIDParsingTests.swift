import Foundation
import Testing
@testable import StockroomCore
@testable import StockroomWire

@Suite("ItemID parsing")
struct ItemIDParsingTests {
    /// The hand-written parser reads every UUID as Foundation does, in either case.
    @Test func theParserAgreesWithFoundation() {
        for _ in 0..<1000 {
            let uuid = UUID()
            #expect(ItemID(uuid.uuidString) == ItemID(uuid))
            #expect(ItemID(uuid.uuidString.lowercased())?.description == uuid.uuidString.lowercased())
        }
        #expect(ItemID("6f1c2e4a-1111-4000-8000-00000000000G") == nil)
        #expect(ItemID("6f1c2e4a+1111-4000-8000-000000000001") == nil)
        #expect(ItemID("6f1c2e4a-1111-4000-8000-0000000000é") == nil)
    }
}
