import FoundationEssentials
@testable import HandoffDaemon
import Testing

@Suite struct LogTests {
    /// The hand-made stamp is the time of day in UTC, as the ISO 8601 format style wrote it before
    /// (which dropped a millisecond now and then: 0.999 s came out as .998, through a Double).
    @Test func theTimestampIsTheTimeOfDayInUTC() {
        #expect(Log.timestamp(wallMillis: 0) == "00:00:00.000")
        #expect(Log.timestamp(wallMillis: 999) == "00:00:00.999")
        #expect(Log.timestamp(wallMillis: 86_399_999) == "23:59:59.999")
        #expect(Log.timestamp(wallMillis: 86_400_000) == "00:00:00.000")
        #expect(Log.timestamp(wallMillis: 1_796_043_599_001) == "12:59:59.001")
    }

    @Test(arguments: [1_000, 59_000, 3_600_000, 1_796_000_123_000, 1_796_043_599_000] as [UInt64])
    func toTheSecondItIsWhatTheFormatStyleWrote(_ millis: UInt64) {
        let date = Date(timeIntervalSince1970: Double(millis) / 1000)
        #expect(Log.timestamp(wallMillis: millis) == date.formatted(.iso8601.time(includingFractionalSeconds: true)))
    }
}
