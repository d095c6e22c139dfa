import HandoffCore
@testable import HandoffDaemon
import Testing

/// `handoff-peer pair --address`: HOST, HOST:PORT or [IPV6]:PORT, the port defaulting to 47181.
@Suite struct PairingAddressTests {
    @Test(arguments: [
        ("169.254.10.2", "169.254.10.2", UInt16(47181)),
        ("169.254.10.2:5000", "169.254.10.2", 5000),
        ("192.0.2.1:1", "192.0.2.1", 1),
        ("192.0.2.1:65535", "192.0.2.1", 65535),
        ("[fe80::1%eth0]:5000", "fe80::1%eth0", 5000),
        ("[fe80::1]", "fe80::1", 47181),
        ("[fe80::1%eth0]", "fe80::1%eth0", 47181),
        ("[2001:db8::2]:47181", "2001:db8::2", 47181),
    ])
    func validAddresses(_ text: String, _ host: String, _ port: UInt16) throws {
        let (parsedHost, parsedPort) = try Daemon.parseAddress(text)
        #expect(parsedHost == host)
        #expect(parsedPort == port)
    }

    /// A bare IPv6 address has more than one colon, so none of them starts a port.
    @Test func bareIPv6AddressKeepsTheDefaultPort() throws {
        #expect(try Daemon.parseAddress("fe80::1%eth0") == ("fe80::1%eth0", 47181))
        #expect(try Daemon.parseAddress("2001:db8::2") == ("2001:db8::2", 47181))
    }

    @Test(arguments: [
        "x:y", "[fe80::1", "1.2.3.4:70000", "1.2.3.4:", "1.2.3.4:-1", "1.2.3.4:5000x",
        "[fe80::1]:", "[fe80::1]x", "[fe80::1]5000", "[fe80::1]:70000", "[fe80::1]:port", "[fe80::1]:5000]",
    ])
    func invalidAddresses(_ text: String) {
        let error = #expect(throws: HandoffError.self) { try Daemon.parseAddress(text) }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message == "'\(text)' is not an address.")
        #expect(error?.fix.contains("[fe80::1%eth0]:47181") == true)
    }
}

/// Regressions: inputs the parser once took.
@Suite struct PairingAddressStrictnessTests {
    @Test func emptyHostsZeroPortsAndSignsAreRefused() {
        for text in ["", ":5000", "[]:5000", "1.2.3.4:0", "[fe80::1]:0", "host:+5000", "host:", "[fe80::1]x"] {
            #expect(throws: HandoffError.self, "\(text)") { try Daemon.parseAddress(text) }
        }
    }
}
