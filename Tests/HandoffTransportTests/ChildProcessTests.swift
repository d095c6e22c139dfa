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

    @Test func threadsCarryTheirNameInProc() async {
        let name = await withCheckedContinuation { done in
            Threads.start("handoff test thread, long") {
                var buffer = [UInt8](repeating: 0, count: 32)
                let fd = open("/proc/thread-self/comm", O_RDONLY)
                let count = read(fd, &buffer, buffer.count)
                close(fd)
                done.resume(returning: String(decoding: buffer[..<max(0, count)], as: UTF8.self))
            }
        }
        #expect(name == "handoff test th\n")
    }
}
