import CLinux
import Glibc
import HandoffRuntime

/// A payload held in a memfd: its producer writes it once through a writable
/// mapping, then seals it (no more writes, no resizing) and shares it read-only,
/// by passing the descriptor (SCM_RIGHTS) instead of copying the bytes.
/// A receiver accepts only a sealed memfd, so what it verified cannot change under it.
///
/// The buffer owns its descriptor and mapping and releases both in deinit.
/// `@unchecked Sendable`: the producer writes and seals on one thread before
/// anyone else sees the buffer; once sealed it never changes.
public final class PayloadBuffer: @unchecked Sendable {
    public let count: Int
    let fd: Int32
    private var base: UnsafeMutableRawPointer?
    public private(set) var isSealed: Bool

    private init(fd: Int32, count: Int, base: UnsafeMutableRawPointer?, sealed: Bool) {
        self.fd = fd
        self.count = count
        self.base = base
        self.isSealed = sealed
    }

    deinit {
        if let base { munmap(base, count) }
        Glibc.close(fd)
    }

    /// A writable buffer of exactly `count` bytes, its pages made up front (one populate costs
    /// less than a fault per 4 KiB when the bytes are at hand; bytes that arrive in pieces go
    /// to `unmapped(count:)` instead).
    public static func create(count: Int, name: String = "handoff-payload") throws(SystemError) -> PayloadBuffer {
        let buffer = try unmapped(count: count, name: name)
        guard count > 0 else { return buffer }
        // On failure the buffer's deinit closes the descriptor.
        guard let base = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, buffer.fd, 0), base != MAP_FAILED else {
            throw SystemError("mmap")
        }
        buffer.base = base
        return buffer
    }

    /// A buffer of exactly `count` bytes filled by `write(_:at:)`, with no mapping until `seal()`.
    /// For bytes that arrive in pieces (a payload from the network): writing into the memfd
    /// makes each page without zeroing it first and without a fault per 4 KiB, about half
    /// the kernel's work of filling a fresh shared mapping (issue 21: 22 against 40 ms per 64 MiB here).
    public static func unmapped(count: Int, name: String = "handoff-payload") throws(SystemError) -> PayloadBuffer {
        guard count >= 0 else { throw SystemError("memfd size", errno: EINVAL) }
        let fd = try systemCall("memfd_create") { handoff_memfd_create(name) }
        guard ftruncate(fd, off_t(count)) == 0 else {
            let error = SystemError("ftruncate")
            Glibc.close(fd)
            throw error
        }
        return PayloadBuffer(fd: fd, count: count, base: nil, sealed: false)
    }

    /// Writes `bytes` at `offset`, before `seal()`; the range must lie inside the buffer.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(SystemError) {
        precondition(!isSealed, "a sealed payload buffer is read-only")
        precondition(offset >= 0 && offset + bytes.count <= count, "a write outside the payload buffer")
        var done = 0
        while done < bytes.count {
            let written = try systemCall("pwrite") { pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done)) }
            // A memfd that takes nothing is out of memory (tmpfs limits); never spin on it.
            guard written > 0 else { throw SystemError("pwrite", errno: ENOSPC) }
            done += written
        }
    }

    /// A writable buffer holding a copy of `bytes`, sealed.
    public static func sealed(copying bytes: UnsafeRawBufferPointer, name: String = "handoff-payload") throws(SystemError) -> PayloadBuffer {
        let buffer = try create(count: bytes.count, name: name)
        if bytes.count > 0 { buffer.mutableBytes.copyMemory(from: bytes) }
        try buffer.seal()
        return buffer
    }

    /// Takes ownership of a received descriptor: it must be a sealed memfd of
    /// at most `maximumBytes` (checked with fstat before anything is mapped).
    /// The descriptor is closed when this fails.
    public init(adopting fd: Int32, maximumBytes: Int) throws(SystemError) {
        var info = stat()
        let sealed = handoff_memfd_is_sealed(fd)
        guard sealed == 1, fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
              info.st_size >= 0, Int(info.st_size) <= maximumBytes else {
            let reason: Int32 = sealed == 1 ? EMSGSIZE : EPERM
            Glibc.close(fd)
            throw SystemError(sealed == 1 ? "payload descriptor larger than \(maximumBytes) bytes" : "payload descriptor is not a sealed memfd",
                              errno: reason)
        }
        let count = Int(info.st_size)
        var base: UnsafeMutableRawPointer?
        if count > 0 {
            guard let mapped = mmap(nil, count, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0), mapped != MAP_FAILED else {
                let error = SystemError("mmap")
                Glibc.close(fd)
                throw error
            }
            base = mapped
        }
        self.fd = fd
        self.count = count
        self.base = base
        self.isSealed = true
    }

    /// The bytes to fill, before `seal()`.
    public var mutableBytes: UnsafeMutableRawBufferPointer {
        precondition(!isSealed, "a sealed payload buffer is read-only")
        precondition(base != nil || count == 0, "an unmapped payload buffer is filled with write(_:at:)")
        return UnsafeMutableRawBufferPointer(start: base, count: count)
    }

    /// The bytes (read-only once sealed).
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Makes the buffer read-only for good: the writable mapping goes (the
    /// kernel refuses the write seal while one exists), the seals go on, and a
    /// read-only mapping replaces it.
    public func seal() throws(SystemError) {
        guard !isSealed else { return }
        if let base {
            munmap(base, count)
            self.base = nil
        }
        try systemCall("fcntl(F_ADD_SEALS)") { handoff_memfd_seal(fd) }
        if count > 0 {
            // Not populated: its pages exist already, and a reader (the scan of a received payload)
            // touches few of them; mapping 64 MiB up front cost more than the faults it saves.
            guard let mapped = mmap(nil, count, PROT_READ, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
                throw SystemError("mmap")
            }
            base = mapped
        }
        isSealed = true
    }

    /// The descriptor, to pass to another process (SCM_RIGHTS dups it in flight);
    /// it stays owned by this buffer. Only a sealed buffer is passed.
    public var descriptorForPassing: Int32 {
        precondition(isSealed, "only a sealed payload buffer is passed on")
        return fd
    }

    public func copyBytes() -> [UInt8] { Array(bytes) }
}
