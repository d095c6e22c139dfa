import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
import Testing

private let peerKey = try! Identity(seed: [UInt8](repeating: 2, count: 32)).publicKey
private let peerID = Ed25519.deviceID(of: peerKey)
private typealias Jobs = AcceptJobs<String, Int, String>

@Suite struct AcceptJobsTests {
    @Test func aSecondAcceptOfTheSameOfferSharesTheFirstOnesOutcome() {
        var jobs = Jobs()
        let offer = Jobs.Offer(peer: peerKey, sequence: 7)
        let id = jobs.begin(offer, peer: peerID, type: "t", target: "browser")
        #expect(id != nil)
        #expect(jobs.begin(offer, peer: peerID, type: "t", target: "terminal") == nil)
        let shared = jobs.share(offer, waiter: 1) && jobs.share(offer, waiter: 2)
        #expect(shared)
        // A newer offer of the same peer is another job.
        let newer = jobs.begin(Jobs.Offer(peer: peerKey, sequence: 8), peer: peerID, type: "t", target: "browser")
        #expect(newer != nil && newer != id)
        let sharers = jobs.end(id!)
        #expect(sharers == [1, 2])
        let sharedAfterEnd = jobs.share(offer, waiter: 3)
        #expect(!sharedAfterEnd)
        #expect(jobs.count == 1)
    }

    @Test func theTargetIsHeldOnceFromBeginToEnd() {
        var jobs = Jobs()
        let id = jobs.begin(Jobs.Offer(peer: peerKey, sequence: 1), peer: peerID, type: "t", target: "Reader")!
        jobs.enter(.delivering, id)
        #expect(jobs.job(id)?.target == "Reader" && jobs.job(id)?.phase == .delivering)
    }

    @Test func anOutcomeIsReportedExactlyOnceEvenWhenTheDaemonStopsMidway() {
        var jobs = Jobs()
        let first = jobs.begin(Jobs.Offer(peer: peerKey, sequence: 1), peer: peerID, type: "t", target: "a")!
        let second = jobs.begin(Jobs.Offer(peer: peerKey, sequence: 2), peer: peerID, type: "t", target: "b")!
        let reportedFirst = jobs.report(first)
        #expect(reportedFirst)
        // Stopping reports only the one not reported yet; its own finish then says nothing more.
        let atStop = jobs.reportAll().map(\.id)
        #expect(atStop == [second])
        let again = [jobs.report(second), jobs.report(first)]
        #expect(again == [false, false])
        let twice = jobs.reportAll()
        #expect(twice.isEmpty)
    }

    @Test func aStartedAppTakesOnlyTheWaitOfItsDesktopFileAndType() {
        var jobs = Jobs()
        let reader = jobs.begin(Jobs.Offer(peer: peerKey, sequence: 1), peer: peerID, type: "org.example.read", target: "Reader")!
        let editor = jobs.begin(Jobs.Offer(peer: peerKey, sequence: 2), peer: peerID, type: "org.example.edit", target: "Editor")!
        jobs.waitForApp(reader, desktopID: "org.example.Reader.desktop", type: "org.example.read", wait: "reader-wait")
        jobs.waitForApp(editor, desktopID: "org.example.Editor.desktop", type: "org.example.edit", wait: "editor-wait")
        #expect(jobs.job(reader)?.phase == .waitingForApp)
        // Right file, wrong type; right type, another file: neither takes it.
        let wrongType = jobs.takeAppWaits(app: "x", desktopID: "org.example.Reader.desktop", types: ["org.example.edit"])
        let wrongFile = jobs.takeAppWaits(app: "x", desktopID: "org.example.Other.desktop", types: ["org.example.read"])
        #expect(wrongType.isEmpty && wrongFile.isEmpty)
        // An app name that is the file's id, without ".desktop", matches too.
        let taken = jobs.takeAppWaits(app: "org.example.Reader", desktopID: nil, types: ["org.example.read"])
        #expect(taken == ["reader-wait"])
        let ended = [jobs.endAppWait(reader), jobs.endAppWait(editor), jobs.endAppWait(editor)]
        #expect(ended == [nil, "editor-wait", nil])
    }
}
