import FoundationEssentials
import Glibc
import HandoffCore

/// Which installed application opens a continued document. Pure: given the
/// desktop entries found here, the name and command line the sender's list
/// recorded, and the file. The sender's command line is never run: it only
/// names the app; the command comes from this laptop's own `.desktop` file.
public enum DocumentLaunch {
    public struct InstalledApp: Equatable, Sendable {
        /// The file name without ".desktop" ("org.xfce.mousepad").
        public var desktopID: String
        public var entry: DesktopEntry

        public init(desktopID: String, entry: DesktopEntry) {
            self.desktopID = desktopID
            self.entry = entry
        }
    }

    /// The app that matches the recorded one: by desktop id, then by Name, then by
    /// the program its Exec runs; only apps that take a file (%f %F %u %U) and are not hidden.
    public static func match(application: String?, exec: String?, in apps: [InstalledApp]) -> InstalledApp? {
        let candidates = apps.filter { app in
            guard !app.entry.isHidden, app.entry.fields["Type"] ?? "Application" == "Application",
                  let exec = app.entry.exec else { return false }
            return DesktopEntry.execWords(exec).contains { ["%f", "%F", "%u", "%U"].contains($0) }
        }
        if let application {
            if let byID = candidates.first(where: { $0.desktopID == application }) { return byID }
            if let byName = candidates.first(where: { $0.entry.name == application }) { return byName }
        }
        let program = exec.flatMap { DesktopEntry.execWords($0).first }.map(basename)
        guard let program, !program.isEmpty else { return nil }
        return candidates.first { app in app.entry.exec.flatMap { DesktopEntry.execWords($0).first }.map(basename) == program }
    }

    /// The app's command line for `path`: %f/%F the path, %u/%U its file: URI, %% a
    /// percent sign, other field codes dropped (Desktop Entry Specification, "The Exec key").
    public static func arguments(exec: String, path: String) -> [String] {
        DesktopEntry.execWords(exec).compactMap { word -> String? in
            switch word {
            case "%f", "%F": return path
            case "%u", "%U": return fileURI(path)
            case "%i", "%c", "%k", "%d", "%D", "%n", "%N", "%v", "%m": return nil
            default: return word.replacing("%%", with: "%")
            }
        }
    }

    static func basename(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// "/home/ana/My notes.md" -> "file:///home/ana/My%20notes.md" (RFC 8089; unreserved and "/" kept).
    public static func fileURI(_ path: String) -> String {
        var out = "file://"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
            }
        }
        return out
    }
}
