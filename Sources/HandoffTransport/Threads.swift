import CLinux
import Glibc

/// Threads without Foundation's `Thread` (full Foundation brings ICU into every program).
/// Each is detached and named from inside itself, so the name shows in
/// /proc/PID/task/*/comm, top and perf (Linux keeps 15 bytes of it).
public enum Threads {
    private final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Runs `body` on a new thread called `name`.
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, threadEntry, start)
        pthread_attr_destroy(&attributes)
        // Only when the process is out of threads or memory; nothing could go on.
        if status != 0 { fatalError("pthread_create failed: \(String(cString: strerror(status)))") }
    }

    private static let threadEntry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
        setName(start.name)
        start.body()
        return nil
    }

    /// Names the calling thread (the first 15 bytes, the kernel's limit).
    public static func setName(_ name: String) {
        var bytes: [UInt8] = []
        for scalar in name.unicodeScalars {
            // Whole characters only: never half a UTF-8 sequence.
            guard bytes.count + scalar.utf8.count <= 15 else { break }
            bytes.append(contentsOf: scalar.utf8)
        }
        bytes.append(0)
        _ = bytes.withUnsafeBufferPointer { pointer in
            pointer.withMemoryRebound(to: CChar.self) { handoff_set_thread_name($0.baseAddress!) }
        }
    }

    /// Blocks the calling thread (never an actor's or the executor's).
    public static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
    }
}
