/// The panel item's icon as pixels (StatusNotifierItem's IconPixmap: ARGB32,
/// bytes in network order), drawn here so it shows whatever icon theme the
/// desktop has: a blue disc with a white arrow towards the right, "continue
/// over there". Each pixel is sampled 4 x 4 times for smooth edges.
public enum PanelIcon {
    public struct Pixmap: Equatable, Sendable {
        public var width: Int32
        public var height: Int32
        public var argb: [UInt8]
    }

    /// Panels pick the size nearest their own; 22 and 24 are the common ones, 48 for HiDPI.
    public static let pixmaps: [Pixmap] = [16, 22, 24, 32, 48].map(draw)

    static func draw(size: Int) -> Pixmap {
        var argb = [UInt8](repeating: 0, count: size * size * 4)
        let samples = 4
        for y in 0..<size {
            for x in 0..<size {
                var disc = 0
                var arrow = 0
                for sy in 0..<samples {
                    for sx in 0..<samples {
                        // The point in a unit square centred on 0.
                        let u = (Double(x) + (Double(sx) + 0.5) / Double(samples)) / Double(size) - 0.5
                        let v = (Double(y) + (Double(sy) + 0.5) / Double(samples)) / Double(size) - 0.5
                        if u * u + v * v <= 0.47 * 0.47 { disc += 1 }
                        if inArrow(u, v) { arrow += 1 }
                    }
                }
                let all = samples * samples
                let index = (y * size + x) * 4
                let alpha = disc * 255 / all
                // White where the arrow is, #3584e4 elsewhere on the disc.
                let white = arrow * 255 / all
                argb[index] = UInt8(alpha)
                argb[index + 1] = UInt8(0x35 + (255 - 0x35) * white / 255)
                argb[index + 2] = UInt8(0x84 + (255 - 0x84) * white / 255)
                argb[index + 3] = UInt8(0xE4 + (255 - 0xE4) * white / 255)
            }
        }
        return Pixmap(width: Int32(size), height: Int32(size), argb: argb)
    }

    /// A shaft from the left and a head pointing right.
    private static func inArrow(_ u: Double, _ v: Double) -> Bool {
        let shaft = u >= -0.28 && u <= 0.05 && abs(v) <= 0.075
        let head = u >= 0.0 && u <= 0.28 && abs(v) <= 0.23 * (0.28 - u) / 0.28
        return shaft || head
    }
}
