import Glibc
import HandoffAPI
import HandoffKit
import Testing

/// The ticket files: made by the accepting client, taken once by the app (review, round three, item 1).
@Suite struct AcceptTicketsTests {
    func scratch() -> String {
        var template = Array("/tmp/handoff-tickets-XXXXXX".utf8CString)
        _ = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return String(cString: template) + "/accepts"
    }

    @Test func aTicketIsTakenOnceAndOnlyWhereItWasMade() throws {
        let directory = scratch()
        let ticket = try #require(AcceptTickets.mint(peer: "laptop-a", directory: directory))
        #expect(AcceptTicket.isWellFormed(ticket))
        #expect(AcceptTickets.redeem(ticket, directory: directory))
        #expect(!AcceptTickets.redeem(ticket, directory: directory), "used once")
        #expect(!AcceptTickets.redeem(nil, directory: directory))
        #expect(!AcceptTickets.redeem(String(repeating: "0", count: 32), directory: directory))
        #expect(!AcceptTickets.redeem("../../etc/passwd", directory: directory))
    }

    @Test func aDirectoryOthersCanWriteIsNotTrusted() throws {
        let directory = scratch()
        let ticket = try #require(AcceptTickets.mint(peer: "laptop-a", directory: directory))
        chmod(directory, 0o777)
        #expect(!AcceptTickets.redeem(ticket, directory: directory))
        #expect(AcceptTickets.mint(peer: "laptop-a", directory: directory) == nil)
    }

    @Test func aStaleTicketIsRefusedAndSwept() throws {
        let directory = scratch()
        let ticket = try #require(AcceptTickets.mint(peer: "laptop-a", directory: directory))
        var old = [timespec(tv_sec: time(nil) - AcceptTickets.lifetimeSeconds - 5, tv_nsec: 0), timespec(tv_sec: time(nil) - AcceptTickets.lifetimeSeconds - 5, tv_nsec: 0)]
        _ = utimensat(AT_FDCWD, directory + "/" + ticket, &old, 0)
        #expect(!AcceptTickets.redeem(ticket, directory: directory))
        for _ in 0..<(AcceptTickets.maximumWaiting + 10) { _ = AcceptTickets.mint(peer: "p", directory: directory) }
        var count = 0
        if let handle = opendir(directory) {
            while let entry = readdir(handle) { if entry.pointee.d_name.0 != 46 { count += 1 } }
            closedir(handle)
        }
        #expect(count <= AcceptTickets.maximumWaiting)
    }
}
