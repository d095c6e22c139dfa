import HandoffTransport
import HandoffRuntime

/// The connections fetches are reading from, with the interface each goes out on,
/// so that a link going away (netlink) moves its transfers at once: closing the
/// connection wakes the fetch thread, which resumes over a link that works
/// instead of waiting out the 3 s stall. Fetch threads register and unregister;
/// the daemon cuts. A connection is closed here only by `close()`, which its
/// owner (the fetch) tolerates, and never released here.
final class FetchLinks: Sendable {
    private struct Link {
        var connection: StreamConnection
        var interface: String?
    }

    private let links = Locked<[Int: Link]>([:])
    private let nextID = Locked(0)

    /// `interfaces` names the link of a peer on a connected subnet without a route lookup.
    func register(_ connection: StreamConnection, interfaces: InterfaceTable? = nil) -> Int {
        let interface = connection.remoteHost.flatMap { host in interfaces?.onLink(host)?.interface ?? RouteCheck.way(toward: host)?.interface }
        let id = nextID.withLock { value in
            value += 1
            return value
        }
        links.withLock { $0[id] = Link(connection: connection, interface: interface) }
        return id
    }

    func unregister(_ id: Int) {
        links.withLock { _ = $0.removeValue(forKey: id) }
    }

    /// Cuts every registered connection whose interface is not among `up`; how many.
    func cut(keeping up: Set<String>) -> Int {
        let gone = links.withLock { links in
            links.filter { $0.value.interface.map { !up.contains($0) } ?? false }.map(\.value.connection)
        }
        for connection in gone { connection.close() }
        return gone.count
    }
}
