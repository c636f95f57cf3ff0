import Logging
import Testing

@testable import StockroomServer

/// A task retried every round (the presence tick, every second) logs an outage in a few lines.
@Suite struct FailureStretchTests {
    struct Refused: Error, CustomStringConvertible {
        var description: String { "disk I/O error" }
    }

    @Test func anOutageIsItsFirstFailureAReminderAMinuteAndItsEnd() {
        let handler = RecordingLogHandler()
        let logger = Logger(label: "test") { _ in handler }
        var stretch = FailureStretch("recording presence")
        let start = ContinuousClock.now
        stretch.succeeded(logger: logger)  // nothing failed: nothing to say
        for second in 0..<150 {
            stretch.failed(Refused(), logger: logger, now: start + .seconds(second))
        }
        stretch.succeeded(logger: logger)
        stretch.failed(Refused(), logger: logger, now: start + .seconds(151))
        #expect(handler.recorded.value.withLock { $0 } == [
            "recording presence failed; retrying every round error=disk I/O error failedRounds=1",
            "recording presence still fails; retrying every round error=disk I/O error failedRounds=61",
            "recording presence still fails; retrying every round error=disk I/O error failedRounds=121",
            "recording presence works again failedRounds=150",
            "recording presence failed; retrying every round error=disk I/O error failedRounds=1",
        ])
    }
}
