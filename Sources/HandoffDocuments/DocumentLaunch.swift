import FoundationEssentials
import Glibc
import HandoffCore

/// How an installed application is started on a continued document: the command
/// comes from this laptop's own `.desktop` file (DocumentOpening picks which). Pure.
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
