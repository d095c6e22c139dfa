import FoundationEssentials
import Glibc
import HandoffTransport
import HandoffRuntime

/// Counts changes to the XDG application directories with inotify, so the
/// `.desktop` declarations are scanned again only after one. A directory that
/// does not exist yet is watched through its nearest existing ancestor, for
/// the one name that leads to it; when that appears, the watches are set up
/// again. The event loop owns the inotify descriptor: nothing wakes unless
/// something in those directories changes.
final class DesktopFileWatcher: Sendable {
    /// What to watch for one configured directory: the directory itself, or an
    /// existing ancestor and the name of its child on the way to it.
    struct Watch: Equatable {
        var path: String
        var waitingFor: String?
    }

    static let directoryEvents = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB
                                        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
    static let ancestorEvents = UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    private let generation: Locked<UInt64>
    /// The inotify descriptor as the loop holds it; closing it closes the descriptor.
    private let inotifyWatch: EventLoop.Watch

    /// What to watch for `directories`; `isDirectory` is the file system (a parameter for tests).
    static func plan(for directories: [String], isDirectory: (String) -> Bool) -> [Watch] {
        var watches: [Watch] = []
        for directory in directories {
            var path = directory
            var child: String?
            while !isDirectory(path) {
                guard let slash = path.lastIndex(of: "/"), path != "/" else { break }
                child = String(path[path.index(after: slash)...])
                path = slash == path.startIndex ? "/" : String(path[..<slash])
            }
            let watch = Watch(path: path, waitingFor: isDirectory(path) ? child : nil)
            guard isDirectory(path), !watches.contains(watch) else { continue }
            watches.append(watch)
        }
        return watches
    }

    /// Whether a directory an ancestor watch waits for exists already: created between planning
    /// and adding the watch, it sent that watch no event, so the watches must be placed again.
    static func missedCreation(_ watches: some Collection<Watch>, isDirectory: (String) -> Bool) -> Bool {
        watches.contains { watch in watch.waitingFor.map { isDirectory(watch.path + "/" + $0) } ?? false }
    }

    /// Whether an event on `watch` means the declarations may have changed (and, for an ancestor, the watches must be set up again).
    static func matters(_ watch: Watch, mask: UInt32, name: String) -> Bool {
        if mask & UInt32(IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 { return true }
        guard let waiting = watch.waitingFor else { return true }
        return name == waiting
    }

    /// Starts watching; nil (the caller then scans on every read) when inotify is unavailable.
    init?(directories: [String], log: Log) {
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotify >= 0 else {
            log.warning("cannot watch the application directories (inotify: \(String(cString: strerror(errno)))): .desktop files are read on every accept")
            return nil
        }
        let generation = Locked<UInt64>(0)
        self.generation = generation
        // Set up before returning: a change right after the start is counted.
        let watches = Locked(Self.setUp(inotify, directories: directories, replacing: [:]))
        // Room for many events at once; each is 16 bytes and a name of at most NAME_MAX + 1.
        let buffer = ReadBuffer(bytes: 64 * 1024)
        do {
            inotifyWatch = try EventLoop.shared.watch(inotify) { _ in
                let count = read(inotify, buffer.bytes.baseAddress, buffer.bytes.count)
                guard count > 0 else { return }
                var changed = false
                var rebuild = false
                let bytes = UnsafeRawBufferPointer(buffer.bytes)
                var offset = 0
                while offset + MemoryLayout<inotify_event>.size <= count {
                    let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let nameStart = offset + MemoryLayout<inotify_event>.size
                    let nameEnd = min(count, nameStart + Int(event.len))
                    let name = String(decoding: bytes[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
                    offset = nameEnd
                    if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                        (changed, rebuild) = (true, true)
                        continue
                    }
                    // Not a current watch: one a rebuild removed (its IN_IGNORED comes after).
                    guard let watch = watches.withLock({ $0[event.wd] }),
                          DesktopFileWatcher.matters(watch, mask: event.mask, name: name) else { continue }
                    changed = true
                    if watch.waitingFor != nil || event.mask & UInt32(IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                        rebuild = true
                    }
                }
                if rebuild {
                    // Only this handler uses the watches (on the loop); the lock makes that checkable.
                    watches.withLock { $0 = DesktopFileWatcher.setUp(inotify, directories: directories, replacing: $0) }
                }
                if changed { generation.withLock { $0 &+= 1 } }
            }
        } catch {
            log.warning("cannot watch the application directories (\(error)): .desktop files are read on every accept")
            close(inotify)
            return nil
        }
    }

    /// (Re)places the watches for `directories`; returns them by watch descriptor.
    private static func setUp(_ inotify: Int32, directories: [String], replacing old: [Int32: Watch]) -> [Int32: Watch] {
        let isDirectory = { (path: String) -> Bool in
            var info = stat()
            return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
        }
        var watches = old
        // A few rounds at most: a tree created one level at a time while we place the watches.
        for _ in 0..<8 {
            for descriptor in watches.keys { inotify_rm_watch(inotify, descriptor) }
            watches = [:]
            for watch in plan(for: directories, isDirectory: isDirectory) {
                let descriptor = inotify_add_watch(inotify, watch.path, watch.waitingFor == nil ? directoryEvents : ancestorEvents)
                if descriptor >= 0 { watches[descriptor] = watch }
            }
            // CI saw it: `mkdir -p later/applications` right after `later` was noticed, and the
            // removal of a file in `applications` was never seen (no watch was ever placed there).
            guard missedCreation(watches.values, isDirectory: isDirectory) else { break }
        }
        return watches
    }

    /// Changes seen so far (any change to a watched directory counts).
    func changes() -> UInt64 {
        generation.withLock { $0 }
    }

    /// No more counting; the loop closes the inotify descriptor.
    func stop() {
        inotifyWatch.close()
    }
}
