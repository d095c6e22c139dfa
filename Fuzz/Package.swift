// swift-tools-version:6.0
// libFuzzer targets for every parser of handoff (Fuzz/README.md). A package of
// its own so the main build never sees -sanitize=fuzzer; built by Scripts/fuzz:
//   swift build -c debug -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld
import PackageDescription

let package = Package(
    name: "handoff-fuzz",
    dependencies: [.package(name: "handoff", path: "..")],
    targets: [
        .target(name: "CFuzzer"),
        .executableTarget(
            name: "handoff-fuzz",
            dependencies: [
                "CFuzzer",
                .product(name: "HandoffCore", package: "handoff"),
                .product(name: "HandoffAPI", package: "handoff"),
                .product(name: "HandoffCommandLine", package: "handoff"),
                .product(name: "HandoffCrypto", package: "handoff"),
                .product(name: "HandoffDocuments", package: "handoff"),
                .product(name: "HandoffBrowserHost", package: "handoff"),
            ]
        ),
    ]
)
