// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "handoff",
    products: [
        // handoffd, handoff-peer, handoff-notify, handoff-documents, handoff-webext-host and
        // handoff-ble-check are this one program by other names (Scripts/build makes the links).
        .executable(name: "handoff", targets: ["handoff"]),
        .executable(name: "handoff-reader", targets: ["handoff-reader"]),
        .library(name: "HandoffKit", targets: ["HandoffKit"]),
        // For the fuzz targets in Fuzz/, a separate package that depends on this one by path.
        .library(name: "HandoffCore", targets: ["HandoffCore"]),
        .library(name: "HandoffAPI", targets: ["HandoffAPI"]),
        .library(name: "HandoffCommandLine", targets: ["HandoffCommandLine"]),
        .library(name: "HandoffCrypto", targets: ["HandoffCrypto"]),
        .library(name: "HandoffDocuments", targets: ["HandoffDocuments"]),
        .library(name: "HandoffBrowserHost", targets: ["HandoffBrowserHost"]),
    ],
    targets: [
        // libsodium through Debian's libsodium-dev; no Swift package can be fetched here.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // avahi-client's headers from Debian's libavahi-client-dev, for mDNS; the library itself is
        // loaded by handoffd when mDNS starts (Sources/CAvahi/avahi.c says why), not linked.
        .target(name: "CAvahi"),
        // BlueZ's headers from Debian's libbluetooth-dev, for raw HCI sockets: constants, structures
        // and inline functions only, so libbluetooth is not linked (Sources/CBluetooth/shim.h).
        .systemLibrary(
            name: "CBluetooth",
            providers: [.apt(["libbluetooth-dev"])]
        ),
        // libsystemd's sd-bus through Debian's libsystemd-dev, for bluetoothd's D-Bus API.
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // Pure core: model, property-list values, wire codecs, errors. No I/O, no C.
        .target(name: "HandoffCore"),
        // Command lines and their help, one declaration per command, and the programs' common start.
        .target(name: "HandoffCommandLine", dependencies: ["HandoffCore"]),
        // Ed25519 identities, signatures and BLAKE2b digests over libsodium.
        // AES-256-GCM for the records through OpenSSL 3's EVP interface (Debian's libssl-dev;
        // libcrypto is on every desktop already).
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(name: "HandoffCrypto", dependencies: ["CSodium", "CCrypto", "HandoffCore"]),
        // Sockets: UDP multicast discovery, the transfer socket, the local API socket.
        // Linux calls Swift's Glibc module does not import: memfd_create, seals, SCM_RIGHTS.
        .target(name: "CLinux"),
        // The runtime: one event loop (descriptors, deadlines, an inbox), the executor Swift
        // concurrency runs on, named threads, the one lock type, the clocks. No Foundation.
        .target(name: "HandoffRuntime", dependencies: ["CLinux"]),
        .target(name: "HandoffTransport", dependencies: ["CLinux", "HandoffCore", "HandoffRuntime"]),
        // The local API's requests, replies and events as types, with their one JSON codec:
        // handoffd, HandoffKit, handoff-peer and handoff-notify all speak through it. Pure.
        .target(name: "HandoffAPI", dependencies: ["HandoffCore"]),
        // mDNS: publish and browse _handoff._tcp through avahi-daemon.
        .target(name: "HandoffMDNS", dependencies: ["CAvahi", "HandoffCore", "HandoffTransport", "HandoffRuntime"]),
        // Bluetooth LE: HCI transports (raw socket, H4 over Unix), the controller driver, beacons.
        .target(name: "HandoffBluetooth", dependencies: ["CBluetooth", "HandoffCore", "HandoffTransport", "HandoffRuntime"]),
        // Bluetooth LE through bluetoothd's D-Bus API (sd-bus): the default backend.
        .target(name: "HandoffDBus", dependencies: ["CSystemd", "HandoffCore", "HandoffRuntime"]),
        .target(name: "HandoffBlueZ", dependencies: ["CSystemd", "HandoffDBus", "HandoffBluetooth", "HandoffCore", "HandoffTransport", "HandoffRuntime"]),
        // The daemon as a library: state, wiring, request handling.
        .target(name: "HandoffDaemon", dependencies: ["HandoffAPI", "HandoffCore", "HandoffCrypto", "HandoffTransport", "HandoffRuntime", "HandoffMDNS", "HandoffBluetooth", "HandoffBlueZ"]),
        // Client of the local API, used by apps and by handoff-peer.
        .target(name: "HandoffKit", dependencies: ["HandoffAPI", "HandoffCore", "HandoffTransport", "HandoffRuntime"]),
        // The browser extension's native messaging host: the one program called as handoff-webext-host.
        .target(name: "HandoffBrowserHost", dependencies: ["HandoffKit", "HandoffAPI", "HandoffCore", "HandoffTransport", "HandoffRuntime"]),
        // The session agent: offers as desktop notifications (org.freedesktop.Notifications, sd-bus).
        .target(name: "HandoffNotify", dependencies: ["CSystemd", "HandoffDBus", "HandoffKit", "HandoffAPI", "HandoffCore", "HandoffTransport", "HandoffRuntime"]),
        // The documents publisher and receiver (the recently-used list), in the session. Its program is
        // the one program called as handoff-documents.
        .target(name: "HandoffDocuments", dependencies: ["HandoffDBus", "HandoffKit", "HandoffAPI", "HandoffCore", "HandoffCommandLine", "HandoffTransport", "HandoffRuntime"]),
        // Every program in one executable, picked by the name it is called by (Sources/handoff/main.swift).
        .executableTarget(name: "handoff", dependencies: ["HandoffDaemon", "HandoffKit", "HandoffAPI", "HandoffCore", "HandoffCommandLine", "HandoffCrypto",
                                                          "HandoffTransport", "HandoffRuntime", "HandoffBluetooth", "HandoffBlueZ", "HandoffBrowserHost",
                                                          "HandoffNotify", "HandoffDocuments"]),
        // Example app using HandoffKit end to end (Examples/Reader).
        .executableTarget(name: "handoff-reader", dependencies: ["HandoffKit", "HandoffCore", "HandoffCommandLine"], path: "Examples/Reader",
                          exclude: ["handoff-reader.desktop"]),
        .testTarget(name: "HandoffCommandLineTests", dependencies: ["HandoffCommandLine"]),
        // What the programs read from the system: bluetoothd's inventory (busctl), the process's capabilities.
        .testTarget(name: "handoffTests", dependencies: ["handoff"]),
        .testTarget(name: "HandoffDocumentsTests", dependencies: ["HandoffDocuments", "HandoffCore"]),
        .testTarget(name: "HandoffNotifyTests", dependencies: ["HandoffNotify", "HandoffAPI", "HandoffCore"]),
        .testTarget(name: "HandoffKitTests", dependencies: ["HandoffKit", "HandoffAPI", "HandoffCore", "HandoffTransport", "HandoffRuntime"]),
        .testTarget(name: "HandoffBrowserHostTests", dependencies: ["HandoffBrowserHost", "HandoffCore"]),
        .testTarget(name: "HandoffAPITests", dependencies: ["HandoffAPI", "HandoffCore"]),
        .testTarget(name: "HandoffCoreTests", dependencies: ["HandoffCore", "HandoffCrypto"], exclude: ["Vectors.md"]),
        .testTarget(name: "HandoffCryptoTests", dependencies: ["HandoffCrypto", "HandoffCore"]),
        .testTarget(name: "HandoffRuntimeTests", dependencies: ["HandoffRuntime"]),
        .testTarget(name: "HandoffTransportTests", dependencies: ["HandoffTransport", "HandoffRuntime", "HandoffCore"]),
        .testTarget(name: "HandoffBlueZTests", dependencies: ["HandoffBlueZ", "HandoffDBus", "HandoffCore"]),
        .testTarget(name: "HandoffDBusTests", dependencies: ["HandoffDBus", "HandoffBlueZ", "CSystemd", "HandoffCore"]),
        // Several real daemons in one process over loopback discovery (TestHost, LoopbackHub).
        .target(name: "HandoffTestSupport", dependencies: ["HandoffDaemon", "HandoffKit", "HandoffAPI", "HandoffCore", "HandoffTransport", "HandoffRuntime"],
                path: "Tests/HandoffTestSupport"),
        .testTarget(name: "HandoffDaemonTests", dependencies: ["HandoffDaemon", "HandoffCore", "HandoffCrypto", "HandoffTransport", "HandoffRuntime"]),
        .testTarget(name: "InProcessHandoffTests", dependencies: ["HandoffTestSupport", "HandoffDaemon", "HandoffKit", "HandoffAPI", "HandoffCore", "HandoffCrypto", "HandoffTransport", "HandoffRuntime"]),
    ]
)
