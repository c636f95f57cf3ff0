import Testing

@testable import StockroomServer

@Suite struct RequestLogTests {
    @Test(arguments: [
        (Duration.zero, "0.00"), (.microseconds(4200), "4.20"), (.microseconds(420), "0.42"), (.microseconds(19), "0.01"),
        (.seconds(2) + .microseconds(5), "2000.00"), (.milliseconds(61_001) + .microseconds(999), "61001.99"),
    ])
    func durationsAreLoggedInMillisecondsWithTwoDecimals(elapsed: Duration, logged: String) {
        #expect(RequestLine.milliseconds(elapsed) == logged)
    }
}
