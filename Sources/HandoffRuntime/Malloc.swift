import Glibc

/// glibc malloc settings for programs that mostly wait (handoffd, the agents) (`mallopt` and
/// `malloc_trim` are not in Swift's Glibc module, so they are looked up).
public enum Malloc {
    private typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
    private typealias Trim = @convention(c) (Int) -> Int32
    private static let mArenaMax: Int32 = -8

    /// At most two arenas: glibc otherwise gives threads that allocate arenas of
    /// their own (up to eight per core), each keeping what was freed in it.
    /// Call first thing in `main`, before other threads start.
    public static func configureForDaemon() {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "mallopt") else { return }
        _ = unsafeBitCast(symbol, to: Mallopt.self)(mArenaMax, 2)
    }

    /// Gives freed heap memory back to the system (after a large transfer, whose
    /// buffers would otherwise stay resident in the arenas until reused).
    public static func trim() {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    }
}
