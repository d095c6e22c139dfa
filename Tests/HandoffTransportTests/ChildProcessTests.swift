import Glibc
import HandoffTransport
import Synchronization
import Testing

/// Programs started without Foundation's Process, and threads named so /proc shows them.
@Suite struct ChildProcessTests {
    @Test func runReturnsTheStatusAndTheOutput() throws {
        let (status, output) = try ChildProcess.run("/bin/sh", arguments: ["-c", "printf 'hi\\n'; echo err >&2; exit 3"])
        #expect(status == 3)
        #expect(output == Array("hi\n".utf8))
    }

    @Test func outputPastTheBoundIsReadAndDropped() throws {
        let (status, output) = try ChildProcess.run("/bin/sh", arguments: ["-c", "head -c 100000 /dev/zero"], maxOutputBytes: 1000)
        #expect(status == 0)
        #expect(output.count == 1000)
    }

    @Test func aSignalIsReportedAs128PlusItsNumber() throws {
        let started = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "kill -TERM $$"])
        #expect(ChildProcess.waitForExit(started.pid) == 128 + SIGTERM)
    }

    @Test func theEnvironmentIsExactlyTheOneGivenAndStdinIsEmpty() throws {
        let started = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "read line; echo \"$A|$HOME|$line\""],
                                             environment: ["A": "1"], standardOutput: .pipe)
        defer { close(started.output!) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(started.output!, &buffer, buffer.count)
        #expect(ChildProcess.waitForExit(started.pid) == 0)
        #expect(String(decoding: buffer[..<max(0, count)], as: UTF8.self) == "1||\n")
    }

    @Test func aMissingProgramIsAnError() {
        #expect(throws: SystemError.self) { try ChildProcess.spawn("/nonexistent/program", arguments: []) }
        #expect(throws: SystemError.self) { try ChildProcess.spawn("no-such-program-here", arguments: []) }
    }

    @Test func onExitReportsTheStatus() async throws {
        let started = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "exit 7"])
        let status = await withCheckedContinuation { done in ChildProcess.onExit(started.pid) { done.resume(returning: $0) } }
        #expect(status == 7)
    }

    /// handoff-launch holds its connection as fd 3 (socket activation) without CLOEXEC: systemd-run inherited it.
    @Test func aDescriptorWithoutCloexecIsNotInherited() throws {
        let fd = open("/dev/null", O_RDONLY)
        defer { close(fd) }
        #expect(fd > 2)
        let script = "[ -e /proc/$$/fd/\(fd) ] && echo inherited || echo closed; [ -e /proc/$$/fd/2 ] && echo stderr"
        let (status, output) = try ChildProcess.run("/bin/sh", arguments: ["-c", script])
        #expect(status == 0)
        #expect(String(decoding: output, as: UTF8.self) == "closed\nstderr\n")
    }

    @Test func waitingWithATimeoutGivesTheStatusOrNilWhileItRuns() throws {
        let quick = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "exit 3"])
        #expect(ChildProcess.waitForExit(quick.pid, millis: 5_000) == 3)
        let slow = try ChildProcess.spawn("/bin/sleep", arguments: ["5"])
        #expect(ChildProcess.waitForExit(slow.pid, millis: 100) == nil)
        kill(slow.pid, SIGTERM)
        #expect(ChildProcess.waitForExit(slow.pid, millis: 5_000) == 128 + SIGTERM)
    }
}
