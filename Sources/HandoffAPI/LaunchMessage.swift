import FoundationEssentials
import HandoffCore

/// What handoffd asks `handoff-launch` to start: one JSON line on the launcher's
/// socket (Docs/LOCAL-API.md, "The launcher"). The daemon names an app only by
/// its `.desktop` file and the type it is started for, never by a command: the
/// launcher reads the command from that file itself and starts nothing that does
/// not declare the type, so a daemon taken over from the network can start no
/// program of its choosing.
public struct LaunchRequest: JSONCodable {
    public static let version: Int64 = 1
    /// A request and each reply fit in one line of this many bytes.
    public static let maximumBytes = 8 * 1024

    public enum Kind: String, Codable, Sendable {
        /// A declared app, by its `.desktop` file, for an activity type.
        case app
        /// The user's browser, for an http or https page.
        case browser
    }

    public var version: Int64
    public var kind: Kind
    /// `app`: the `.desktop` file's name (its id), e.g. `org.example.Reader.desktop`.
    public var desktopID: String?
    /// `app`: the activity type the app is started for; its file must declare it.
    public var type: String?
    /// `app`: the daemon's local API socket, given to the app as $HANDOFF_SOCKET.
    public var socket: String?
    /// `browser`: the page to open.
    public var url: String?

    enum CodingKeys: String, CodingKey {
        case version = "v", kind, desktopID, type, socket, url
    }

    public static func app(desktopID: String, type: String, socket: String) -> LaunchRequest {
        LaunchRequest(version: version, kind: .app, desktopID: desktopID, type: type, socket: socket, url: nil)
    }

    public static func browser(url: String) -> LaunchRequest {
        LaunchRequest(version: version, kind: .browser, desktopID: nil, type: nil, socket: nil, url: url)
    }

    /// One line as it goes on the socket, newline included.
    public var line: [UInt8] { JSONWriter.line(json) }

    /// Reads a request line; anything malformed, of another version, or missing what its kind needs is refused.
    public static func parse(_ line: [UInt8]) throws(HandoffError) -> LaunchRequest {
        guard line.count <= maximumBytes else {
            throw HandoffError(.invalidRequest, "The launch request is longer than \(maximumBytes) bytes.", fix: "Send one short JSON line.")
        }
        let request = try LaunchRequest(json: try JSONValue.parse(Data(line)), context: "the launch request", code: .invalidRequest)
        guard request.version == version else {
            throw HandoffError(.invalidRequest, "The launch request is of version \(request.version); this launcher reads version \(version).",
                               fix: "Restart handoffd and handoff-launch.socket after an upgrade, so both are the same version.")
        }
        switch request.kind {
        case .app:
            guard let desktopID = request.desktopID, let type = request.type, let socket = request.socket else {
                throw HandoffError(.invalidRequest, "An app launch names its desktopID, type and socket.", fix: "Send all three.")
            }
            guard isDesktopID(desktopID) else {
                throw HandoffError(.invalidRequest, "'\(desktopID)' is not the name of a .desktop file.", fix: "Send a file name ending in .desktop.")
            }
            guard !type.isEmpty, type.utf8.count <= 255, !Activity.containsUnsafeCharacters(type) else {
                throw HandoffError(.invalidRequest, "The activity type is empty, too long or holds control characters.", fix: "Send a declared type.")
            }
            guard socket.hasPrefix("/"), socket.utf8.count < 108, !Activity.containsUnsafeCharacters(socket) else {
                throw HandoffError(.invalidRequest, "The socket is not an absolute path a Unix socket can have.", fix: "Send handoffd's --socket path.")
            }
        case .browser:
            guard let url = request.url else {
                throw HandoffError(.invalidRequest, "A browser launch names its url.", fix: "Send the page's url.")
            }
            try Activity.validateWebpageURL(url)
        }
        return request
    }

    /// A file name of the XDG application directories: no path, no hidden file, ends in `.desktop`.
    public static func isDesktopID(_ name: String) -> Bool {
        name.hasSuffix(".desktop") && name.utf8.count > 8 && name.utf8.count <= 255 && !name.hasPrefix(".")
            && !name.contains("/") && !Activity.containsUnsafeCharacters(name)
    }
}

/// What `handoff-launch` answers, one JSON line each: `started` (or `refused`, and the
/// connection ends), then `exited` with the status if the program ends within the launcher's bound.
public struct LaunchReply: JSONCodable {
    public enum State: String, Codable, Sendable {
        case started, refused, exited
    }

    public var state: State
    /// `exited`: the exit status (128 + the signal when one ended it).
    public var status: Int32?
    /// `refused`: why, and what to do.
    public var error: HandoffError?

    public static let started = LaunchReply(state: .started, status: nil, error: nil)
    public static func refused(_ error: HandoffError) -> LaunchReply { LaunchReply(state: .refused, status: nil, error: error) }
    public static func exited(_ status: Int32) -> LaunchReply { LaunchReply(state: .exited, status: status, error: nil) }

    public var line: [UInt8] { JSONWriter.line(json) }

    public static func parse(_ line: [UInt8]) throws(HandoffError) -> LaunchReply {
        guard line.count <= LaunchRequest.maximumBytes else {
            throw HandoffError(.internal, "The launcher's reply is longer than \(LaunchRequest.maximumBytes) bytes.", fix: "Reinstall handoff.")
        }
        let reply = try LaunchReply(json: try JSONValue.parse(Data(line)), context: "the launcher's reply")
        switch reply.state {
        case .started: break
        case .refused: guard reply.error != nil else { throw HandoffError(.internal, "The launcher refused without a reason.", fix: "Reinstall handoff.") }
        case .exited: guard reply.status != nil else { throw HandoffError(.internal, "The launcher's exit reply has no status.", fix: "Reinstall handoff.") }
        }
        return reply
    }
}
