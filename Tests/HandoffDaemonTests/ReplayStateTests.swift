import Foundation
import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
import Testing

@Suite struct ReplayStateTests {
    let key = DeviceKey(bytes: [UInt8](repeating: 9, count: 32))!

    @Test func sequencesStayAboveEverythingSentBeforeARestartWithAClockThatSteppedBack() {
        var state = ReplayState()
        let first = state.startSequence(wallClockMillis: 1_000_000)
        #expect(first == 1_000_000)
        // Sent up to an hour ahead without writing; the clock then steps back 10 minutes and the daemon restarts.
        let moved = state.reserve(through: first + 1_000)
        #expect(!moved)
        let second = state.startSequence(wallClockMillis: 1_000_000 - 600_000)
        #expect(second > first + 1_000)
        let movedAgain = state.reserve(through: second + ReplayState.reservationBlock)
        #expect(movedAgain)
    }

    @Test func roundTripsThroughTheStateDirectory() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        try directory.prepare()
        #expect(try ReplayState.load(from: directory) == ReplayState())
        let state = ReplayState(reservedSequence: 42, highest: [key: 7])
        try state.save(to: directory)
        #expect(try ReplayState.load(from: directory) == state)
    }

    @Test(arguments: ["", "{", "{\"version\":2,\"reservedSequence\":1,\"highest\":{}}",
                      "{\"version\":1,\"reservedSequence\":-1,\"highest\":{}}",
                      "{\"version\":1,\"reservedSequence\":1,\"highest\":{\"zz\":1}}"])
    func corruptFilesAreReportedAndLeftAlone(_ text: String) throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        try directory.prepare()
        try directory.writeAtomically(Array(text.utf8), to: directory.replayStatePath)
        #expect(throws: HandoffError.self) { try ReplayState.load(from: directory) }
        #expect(try directory.read(directory.replayStatePath) == Array(text.utf8))
    }
}
