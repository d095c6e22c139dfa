@testable import handoff
import Testing

struct CapabilitiesTests {
    @Test func readsTheEffectiveSetFromProcStatus() {
        let status = "Name:\thandoffd\nCapInh:\t0000000000000000\nCapPrm:\t0000000000003000\nCapEff:\t0000000000003000\nCapBnd:\t000001ffffffffff\n"
        #expect(Capabilities.effective(status: status) == 0x3000)
        #expect(Capabilities.effective(status: "Name:\tx\n") == nil)
        #expect(Capabilities.effective(status: "CapEff:\tnot-hex\n") == nil)
    }

    @Test func namesWhatRawHCIStillNeeds() {
        #expect(Capabilities.missingForRawHCI(effective: 0).sorted() == ["CAP_NET_ADMIN", "CAP_NET_RAW"])
        #expect(Capabilities.missingForRawHCI(effective: 1 << 13) == ["CAP_NET_ADMIN"])
        #expect(Capabilities.missingForRawHCI(effective: 1 << 12) == ["CAP_NET_RAW"])
        #expect(Capabilities.missingForRawHCI(effective: 0x3000).isEmpty)
        // Root's usual full set.
        #expect(Capabilities.missingForRawHCI(effective: 0x1ff_ffff_ffff).isEmpty)
    }
}
