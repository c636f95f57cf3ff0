import Foundation
import TestSupport
import Testing

@testable import StockroomCore

/// `Timestamp.parse` reads the contract's form by hand and reads every text as Foundation's ISO
/// 8601 parser does, valid or not.
@Suite("Timestamp parsing")
struct TimestampParsingTests {
    @Test(arguments: 0..<10)
    func theHandParserAgreesWithFoundation(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        for _ in 0..<500 {
            let year = Int.random(in: 1...9999, using: &random)
            let text = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d", year, Int.random(in: 1...12, using: &random), Int.random(in: 1...31, using: &random),
                Int.random(in: 0...23, using: &random), Int.random(in: 0...59, using: &random), Int.random(in: 0...59, using: &random))
            let fraction = ["", ".5", ".07", ".123", ".999"].randomElement(using: &random)!
            let full = text + fraction + "Z"
            #expect(Timestamp.parse(full) == Timestamp.parseWithFoundation(full), "\(full)")
        }
    }

    @Test(arguments: [
        "2026-11-22T06:00:00.123Z", "2026-11-22T06:00:00Z", "2024-02-29T23:59:59.999Z", "2023-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T06:60:00Z", "2026-11-22T06:00:60Z", "2026-13-01T00:00:00Z",
        "2026-00-10T00:00:00Z", "2026-11-00T00:00:00Z", "2026-11-22T06:00:00.Z", "2026-11-22T06:00:00.1234Z",
        "2026-11-22T06:00:00z", "2026-11-22T06:00:00+01:00", "2026-11-22 06:00:00Z", "2026-1-22T06:00:00Z", "1970-01-01T00:00:00Z",
        "1969-12-31T23:59:59.999Z", "0001-01-01T00:00:00Z", "2026-11-22T06:00:0aZ", "", "yesterday",
    ])
    func everyTextReadsAsFoundationReadsIt(text: String) {
        #expect(Timestamp.parse(text) == Timestamp.parseWithFoundation(text))
        // Its bytes read as the text does.
        #expect(Array(text.utf8).withUnsafeBytes { Timestamp.parse(utf8: $0) } == Timestamp.parse(text))
    }

    @Test func theContractsFormIsReadByHand() {
        #expect(Timestamp.utcMilliseconds("2026-11-22T06:00:00.123Z") == 1_795_327_200_123)
        #expect(Timestamp.utcMilliseconds("1969-12-31T23:59:59.999Z") == -1)
        #expect(Timestamp.utcMilliseconds("2026-11-22T06:00:00+01:00") == nil, "offsets go to Foundation")
    }
}
