import Glibc
import HandoffCore
import HandoffRuntime

/// Sets an integer-or-struct socket option.
func setOption<T>(_ fd: Int32, _ level: Int32, _ option: Int32, _ value: T, _ name: String) throws(SystemError) {
    try systemCall(name) {
        withUnsafeBytes(of: value) { setsockopt(fd, level, option, $0.baseAddress, socklen_t($0.count)) }
    }
}

/// Binds `fd` to every address of `family` (AF_INET or AF_INET6) on `port`.
func bindAnyAddress(_ fd: Int32, family: Int32, port: UInt16, _ name: String) throws(SystemError) {
    if family == AF_INET6 {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        address.sin6_addr = in6addr_any
        try systemCall(name) {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    } else {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = INADDR_ANY
        try systemCall(name) {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }
}

/// The local port `fd` is bound to (the one the kernel picked for port 0).
func boundPort(_ fd: Int32) throws(SystemError) -> UInt16 {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    try systemCall("getsockname") {
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
    }
    return SocketAddress(storage: storage, length: length).port
}

/// This user's home directory from the password database (for when $HOME is unset).
public func passwordHomeDirectory() -> String {
    guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return "/" }
    return String(cString: directory)
}
