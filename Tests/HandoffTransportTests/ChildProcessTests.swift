import Glibc
import HandoffTransport
import HandoffRuntime
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

    /// The loop watches the child's pidfd: the status arrives on the loop's thread, no thread waits.
    @Test func onExitReportsTheStatusOnTheLoop() async throws {
        let loop = EventLoop(name: "test loop")
        let started = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "sleep 0.05; exit 7"])
        let (status, onLoop) = await withCheckedContinuation { done in
            ChildProcess.onExit(started.pid, loop: loop) { done.resume(returning: ($0, loop.inLoop)) }
        }
        #expect(status == 7)
        #expect(onLoop)
    }

    /// A child that ended before the watch was placed is reported too (its pidfd is readable at once).
    @Test func onExitReportsAChildThatEndedAlready() async throws {
        let started = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "exit 5"])
        Threads.sleep(seconds: 0.1)
        let status = await withCheckedContinuation { done in ChildProcess.onExit(started.pid) { done.resume(returning: $0) } }
        #expect(status == 5)
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
