import Foundation
@testable import handoff
import Testing

struct BlueZInventoryTests {
    // busctl --json=short call org.bluez / org.freedesktop.DBus.ObjectManager GetManagedObjects, trimmed:
    // a powered BT 5 adapter under bluetoothd -E, a powered-off one without the monitor manager, and a device.
    static let reply = #"""
    {"type":"a{oa{sa{sv}}}","data":[{
     "/org/bluez":{"org.freedesktop.DBus.Introspectable":{},"org.bluez.AgentManager1":{}},
     "/org/bluez/hci1":{"org.bluez.Adapter1":{"Address":{"type":"s","data":"00:11:22:33:44:55"},"Powered":{"type":"b","data":false},
        "Discoverable":{"type":"b","data":false}},
       "org.bluez.LEAdvertisingManager1":{"ActiveInstances":{"type":"y","data":0},"SupportedInstances":{"type":"y","data":1},
        "SupportedIncludes":{"type":"as","data":["tx-power"]}}},
     "/org/bluez/hci0":{"org.bluez.Adapter1":{"Powered":{"type":"b","data":true},"Discoverable":{"type":"b","data":true}},
       "org.bluez.LEAdvertisingManager1":{"ActiveInstances":{"type":"y","data":1},"SupportedInstances":{"type":"y","data":4},
        "SupportedSecondaryChannels":{"type":"as","data":["1M","2M","Coded"]}},
       "org.bluez.AdvertisementMonitorManager1":{"SupportedMonitorTypes":{"type":"as","data":["or_patterns"]}}},
     "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF":{"org.bluez.Device1":{"RSSI":{"type":"n","data":-60}}}
    }]}
    """#

    @Test func readsAdaptersAndTheirManagers() throws {
        let inventory = try #require(BlueZInventory.parse(busctlJSON: Data(Self.reply.utf8)))
        #expect(inventory.adapters.map(\.name) == ["hci0", "hci1"])
        let first = inventory.adapters[0]
        #expect(first.powered && first.discoverable && first.advertising && first.monitor)
        #expect(first.supportedInstances == 4 && first.activeInstances == 1)
        #expect(first.secondaryChannels == ["1M", "2M", "Coded"])
        #expect(first.monitorTypes == ["or_patterns"])
        #expect(BlueZInventory.problems(of: first).isEmpty)
        let second = inventory.adapters[1]
        #expect(!second.powered && !second.monitor && second.supportedInstances == 1 && second.secondaryChannels.isEmpty)
        #expect(BlueZInventory.problems(of: second).map(\.problem) == ["hci1 is powered off."])
    }

    @Test func refusesWhatIsNotAnObjectTree() {
        #expect(BlueZInventory.parse(busctlJSON: Data("{}".utf8)) == nil)
        #expect(BlueZInventory.parse(busctlJSON: Data(#"{"type":"a{sv}","data":[{}]}"#.utf8)) == nil)
        #expect(BlueZInventory.parse(busctlJSON: Data("not json".utf8)) == nil)
        // No adapter at all: an empty inventory, not a failure to parse.
        #expect(BlueZInventory.parse(busctlJSON: Data(#"{"type":"a{oa{sa{sv}}}","data":[{"/org/bluez":{}}]}"#.utf8))?.adapters == [])
    }

    @Test func namesAFullAdvertisingTable() {
        let full = BlueZInventory.Adapter(name: "hci0", powered: true, advertising: true, supportedInstances: 0)
        #expect(BlueZInventory.problems(of: full).map(\.problem) == ["hci0 takes no more advertisements (SupportedInstances 0)."])
        let none = BlueZInventory.Adapter(name: "hci2", powered: true)
        #expect(BlueZInventory.problems(of: none).count == 1)
    }
}
