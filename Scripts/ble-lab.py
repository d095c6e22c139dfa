#!/usr/bin/env python3
"""Bluetooth LE "air" for the network-namespace lab: one emulated controller per host.

Usage:
    python3 Scripts/ble-lab.py --dir DIR [--reports auto|legacy|extended] [--model legacy|bt5]
                               [--vhci] [-v] HOST [HOST...]

Runs one Bumble controller per HOST, all on one shared link (the air), and
serves each on the Unix stream socket DIR/HOST.hci with H4 framing (one packet
type byte, then the HCI packet, as a Linux raw HCI socket carries them). A
socket path is reachable from every network namespace, a loopback port is not.
The controller outlives its client: a restarted daemon connects again and finds
it as it left it, as with real hardware. One client per controller at a time; a
new connection takes over from the old one (a daemon restarted before the lab
noticed the old one die).

--vhci attaches each controller to the kernel through /dev/vhci instead (one
hciN per HOST, in order; needs the hci_vhci module and root): the real Linux
Bluetooth stack then drives it, as in Scripts/vm-lab. No HOST.hci sockets.

--model bt5 makes each controller behave like a BT 5.x laptop chip (Intel
AX200 and later): it announces the extended advertising and scanning
commands, and once a host has used any extended advertising or scanning
command it refuses the legacy ones with Command Disallowed (0x0C), as the
Core specification requires (Vol 4, Part E, 3.1.1) until the next Reset.
The default, legacy, announces only the legacy commands (a BT 4.x chip).

Once every socket listens it writes its pid to DIR/ble-lab.pid and prints
"ready" on stdout. SIGTERM, SIGINT or "quit" stop it and remove its files.

Control socket DIR/control.sock: Unix stream, one command per line, one reply
line per command, "ok ..." or "error ...":
    range HOST out|in     HOST leaves radio range of everyone / comes back:
                          its PDUs reach nobody and it hears nobody; its LE
                          connections end with a supervision timeout (0x08)
    rssi HOST DBM|reset   everyone else hears HOST at DBM (-127..20) from now
                          on; reset returns to Bumble's fixed -50 dBm
    controller HOST remove|restore
                          unplug HOST's controller (its client is cut off and
                          new connections are closed at once) / plug it back
    status                one line: HOST range=in|out controller=present|removed
                          rssi=default|DBM client=yes|no adv=on|off scan=on|off,
                          hosts split by "; "
    help                  the command list
    quit                  stop the lab
Example: echo 'rssi a -85' | socat - UNIX-CONNECT:DIR/control.sock

Known to work with bumble 0.0.236 (PyPI), Python 3.11. Bumble's controller is
an emulator with gaps; the subclasses below close the ones a scanning and
advertising host meets, so the lab behaves like a controller that follows the
Core specification (Vol 4, Part E) rather than like Bumble:
- reports are legacy (subevent 0x02) when the host scans with the legacy
  commands and extended (0x0D) with the extended ones (--reports overrides);
- ADV_SCAN_IND and ADV_NONCONN_IND are sent too, not only ADV_IND;
- a passive scanner gets no scan response; an active one gets the
  advertiser's scan response data (Bumble repeats the advertising data);
- LE events reach the host only if Set Event Mask bit 61 and the LE event
  mask bit allow them (spec defaults at start and after Reset);
- filter duplicates is honoured; advertising intervals are in 0.625 ms units;
- Reset stops advertising and scanning and clears their parameters;
- LE Set Random Address (during advertising or scanning) and LE Set
  Advertising Parameters (during advertising) answer Command Disallowed;
- unknown opcodes answer Unknown HCI Command (0x01) and malformed commands
  Invalid HCI Command Parameters (0x12), where Bumble stays silent.
"""

import argparse
import asyncio
import dataclasses
import logging
import os
import re
import signal
import sys

try:
    from bumble import hci, ll
    from bumble.controller import Controller, LegacyAdvertiser
    from bumble.link import LocalLink
    from bumble.transport.common import PacketParser
except ImportError as missing:
    sys.exit(f"ble-lab: {missing}: run it with a Python that has bumble (pip install bumble==0.0.236)")

log = logging.getLogger("ble-lab")

DEFAULT_RSSI = -50  # what Bumble puts in every report
RSSI_RANGE = range(-127, 21)  # HCI's RSSI range in dBm
# Spec defaults after power-on and Reset: no LE Meta events (bit 61) until a host asks.
DEFAULT_EVENT_MASK = 0x00001FFFFFFFFFFF
DEFAULT_LE_EVENT_MASK = 0x000000000000001F
LE_META_EVENT_BIT = 61
MAX_LEGACY_DATA = 31
# Events queued for a client that stops reading are dropped past this, as a
# controller's full event buffer would.
MAX_CLIENT_BACKLOG = 1 << 20
HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
SUN_PATH_MAX = 107

Status = hci.HCI_StatusReturnParameters
ErrorCode = hci.HCI_ErrorCode
AdvType = hci.HCI_LE_Set_Advertising_Parameters_Command.AdvertisingType
LegacyReportEvent = hci.HCI_LE_Advertising_Report_Event
ExtReportEvent = hci.HCI_LE_Extended_Advertising_Report_Event
ExtType = ExtReportEvent.EventType
ADV_IND, ADV_SCAN_IND, ADV_NONCONN_IND = AdvType.ADV_IND, AdvType.ADV_SCAN_IND, AdvType.ADV_NONCONN_IND
# Core Vol 4, Part E, 3.1.1: the two command sets that must not be mixed.
EXTENDED_COMMANDS = {
    hci.HCI_LE_SET_ADVERTISING_SET_RANDOM_ADDRESS_COMMAND,
    hci.HCI_LE_SET_EXTENDED_ADVERTISING_PARAMETERS_COMMAND,
    hci.HCI_LE_SET_EXTENDED_ADVERTISING_DATA_COMMAND,
    hci.HCI_LE_SET_EXTENDED_SCAN_RESPONSE_DATA_COMMAND,
    hci.HCI_LE_SET_EXTENDED_ADVERTISING_ENABLE_COMMAND,
    hci.HCI_LE_READ_MAXIMUM_ADVERTISING_DATA_LENGTH_COMMAND,
    hci.HCI_LE_READ_NUMBER_OF_SUPPORTED_ADVERTISING_SETS_COMMAND,
    hci.HCI_LE_REMOVE_ADVERTISING_SET_COMMAND,
    hci.HCI_LE_CLEAR_ADVERTISING_SETS_COMMAND,
    hci.HCI_LE_SET_EXTENDED_SCAN_PARAMETERS_COMMAND,
    hci.HCI_LE_SET_EXTENDED_SCAN_ENABLE_COMMAND,
    hci.HCI_LE_EXTENDED_CREATE_CONNECTION_COMMAND,
}
# Legacy commands answered with Command Status rather than Command Complete.
LEGACY_STATUS_COMMANDS = {hci.HCI_LE_CREATE_CONNECTION_COMMAND}
LEGACY_COMMANDS = LEGACY_STATUS_COMMANDS | {
    hci.HCI_LE_SET_ADVERTISING_PARAMETERS_COMMAND,
    hci.HCI_LE_READ_ADVERTISING_PHYSICAL_CHANNEL_TX_POWER_COMMAND,
    hci.HCI_LE_SET_ADVERTISING_DATA_COMMAND,
    hci.HCI_LE_SET_SCAN_RESPONSE_DATA_COMMAND,
    hci.HCI_LE_SET_ADVERTISING_ENABLE_COMMAND,
    hci.HCI_LE_SET_SCAN_PARAMETERS_COMMAND,
    hci.HCI_LE_SET_SCAN_ENABLE_COMMAND,
}
SCAN_RSP = LegacyReportEvent.EventType.SCAN_RSP
SCANNABLE = (ADV_IND, ADV_SCAN_IND)
# Extended-report event types for legacy PDUs (Vol 4, Part E, 7.7.65.13).
EXT_TYPE_OF_LEGACY = {
    (ADV_IND, False): 0x13,
    (ADV_SCAN_IND, False): 0x12,
    (ADV_NONCONN_IND, False): 0x10,
    (ADV_IND, True): 0x1B,
    (ADV_SCAN_IND, True): 0x1A,
}


@dataclasses.dataclass
class LegacyPdu(ll.AdvInd):
    """A legacy advertising PDU of any undirected type. It subclasses Bumble's
    AdvInd so the receiving controller's code reports it; the report is then
    corrected to the real type."""

    advertising_type: int = ADV_IND


@dataclasses.dataclass
class LabLegacyAdvertiser(LegacyAdvertiser):
    # Spec default interval (1.28 s) instead of Bumble's 0, which would re-arm the timer at once.
    advertising_interval_min: int = 0x0800
    advertising_interval_max: int = 0x0800

    def _on_timer_fired(self) -> None:
        self.send_advertising_data()
        # HCI intervals are in 0.625 ms units (Bumble reads them as ms); 20 ms is the spec's minimum.
        interval = max(self.advertising_interval_min, 0x20) * 0.000625
        self.timer_handle = asyncio.get_running_loop().call_later(interval, self._on_timer_fired)

    def send_advertising_data(self) -> None:
        # Bumble sends ADV_IND only; directed advertising (ADV_DIRECT_IND) stays unsupported.
        if self.enabled and self.advertising_type in (ADV_IND, ADV_SCAN_IND, ADV_NONCONN_IND):
            self.controller.send_advertising_pdu(
                LegacyPdu(
                    advertiser_address=self.address,
                    data=self.advertising_data,
                    advertising_type=self.advertising_type,
                )
            )


@dataclasses.dataclass
class Reception:
    """What a controller is receiving while it handles one advertising PDU."""

    sender: "LabController"
    pdu: ll.AdvertisingPdu
    rssi: int


class Air(LocalLink):
    """The shared link, with per-host range and transmit RSSI."""

    def __init__(self):
        super().__init__()
        self.out_of_range = set()
        self.rssi = {}  # sender controller -> dBm its PDUs are heard at

    def reaches(self, a, b) -> bool:
        return a not in self.out_of_range and b not in self.out_of_range

    def send_advertising_pdu(self, sender_controller, packet):
        # Unlike LocalLink, deliver through _receive so the receiver knows the sender.
        loop = asyncio.get_running_loop()
        for receiver in list(self.controllers):
            if receiver is not sender_controller and self.reaches(sender_controller, receiver):
                loop.call_soon(self._receive, sender_controller, receiver, packet)

    def _receive(self, sender, receiver, packet):
        # Range may have changed since the PDU left.
        if not self.reaches(sender, receiver):
            return
        receiver.receive_advertising_pdu(Reception(sender, packet, self.rssi.get(sender, DEFAULT_RSSI)))

    # Connection traffic: nothing crosses between hosts out of each other's range.
    def send_acl_data(self, sender_controller, destination_address, transport, data):
        destination = self.find_le_controller(destination_address) or self.find_classic_controller(destination_address)
        if destination is not None and self.reaches(sender_controller, destination):
            super().send_acl_data(sender_controller, destination_address, transport, data)

    def send_ll_control_pdu(self, sender_address, receiver_address, packet):
        sender = self.find_le_controller(sender_address)
        receiver = self.find_le_controller(receiver_address)
        if sender is not None and receiver is not None and self.reaches(sender, receiver):
            super().send_ll_control_pdu(sender_address, receiver_address, packet)

    def send_lmp_packet(self, sender_controller, receiver_address, packet):
        receiver = self.find_classic_controller(receiver_address)
        if receiver is not None and self.reaches(sender_controller, receiver):
            super().send_lmp_packet(sender_controller, receiver_address, packet)

    def set_in_range(self, controller, in_range: bool):
        if in_range:
            self.out_of_range.discard(controller)
        elif controller not in self.out_of_range:
            self.out_of_range.add(controller)
            # Bumble has no supervision timeout; end the connections as it would, at once.
            self.end_connections(controller, notify_self=True)

    def end_connections(self, controller, notify_self: bool):
        """Ends controller's LE connections: its peers see a supervision
        timeout; controller itself too if notify_self (else they just vanish, as on Reset)."""
        own = {controller.public_address, controller.random_address}
        own.update(c.self_address for c in controller.le_connections.values())
        for other in list(self.controllers):
            if other is controller:
                continue
            for connection in list(other.le_connections.values()):
                if connection.peer_address in own:
                    other.on_le_disconnected(connection, ErrorCode.CONNECTION_TIMEOUT_ERROR)
        for connection in list(controller.le_connections.values()):
            if notify_self:
                controller.on_le_disconnected(connection, ErrorCode.CONNECTION_TIMEOUT_ERROR)
            else:
                controller.le_connections.pop(connection.peer_address, None)


class LabController(Controller):
    """Bumble's controller with the fixes listed in the module docstring."""

    def __init__(self, name, air: Air, public_address: str, reports: str, model: str = "legacy"):
        super().__init__(name, link=air, public_address=public_address)
        self.air = air
        self.reports = reports
        self.model = model
        if model == "bt5":
            # An instance attribute: the class's set is shared by every controller.
            self.supported_commands = set(Controller.supported_commands) | EXTENDED_COMMANDS
        self.extended_used = False  # an extended command since the last Reset
        self.le_legacy_advertiser = LabLegacyAdvertiser(self)
        self.event_mask = DEFAULT_EVENT_MASK
        self.le_event_mask = DEFAULT_LE_EVENT_MASK
        self.legacy_scanning = True  # the last scan enable came as the legacy command
        self.reported = set()  # for filter duplicates, since scanning was enabled
        self.rx = None  # the Reception being handled, while on_ll_advertising_pdu runs

    def receive_advertising_pdu(self, rx: Reception):
        # Bumble builds the reports synchronously inside on_ll_advertising_pdu,
        # so send_hci_packet can correct them while self.rx is set.
        self.rx = rx
        # Bumble would also connect to a non-connectable advertiser an initiator waits for.
        pending = self.pending_le_connection
        unconnectable = isinstance(rx.pdu, LegacyPdu) and rx.pdu.advertising_type != ADV_IND
        if unconnectable:
            self.pending_le_connection = None
        try:
            self.on_ll_advertising_pdu(rx.pdu)
        finally:
            self.rx = None
            if unconnectable:
                self.pending_le_connection = pending

    def send_hci_packet(self, packet):
        if self.rx is not None:
            if isinstance(packet, (LegacyReportEvent, ExtReportEvent)):
                packet = self._as_heard(packet)
            elif isinstance(packet, hci.HCI_LE_Periodic_Advertising_Report_Event):
                packet = dataclasses.replace(packet, rssi=self.rx.rssi)
            if packet is None:
                return
        if isinstance(packet, hci.HCI_LE_Meta_Event) and not self._unmasked(packet.subevent_code):
            return
        super().send_hci_packet(packet)

    def _unmasked(self, subevent_code: int) -> bool:
        return bool(self.event_mask >> LE_META_EVENT_BIT & 1) and bool(self.le_event_mask >> (subevent_code - 1) & 1)

    def _legacy_reports(self) -> bool:
        if self.reports == "auto":
            return self.legacy_scanning
        return self.reports == "legacy"

    def _as_heard(self, event):
        """Bumble's report event as a spec-following controller would send it
        to this scanner, or None if it would send nothing."""
        rx = self.rx
        legacy_pdu = isinstance(rx.pdu, LegacyPdu)
        adv_type = rx.pdu.advertising_type if legacy_pdu else ADV_IND
        reports = []
        for report in event.reports:
            if isinstance(event, ExtReportEvent):
                scan_response = bool(report.event_type & ExtType.SCAN_RESPONSE)
            else:
                scan_response = report.event_type == SCAN_RSP
            data = report.data
            if scan_response:
                # Only an active scanner sends SCAN_REQ, and only scannable PDUs answer it.
                if self.le_scan_type != hci.HCI_LE_Set_Scan_Parameters_Command.ACTIVE_SCANNING:
                    continue
                if legacy_pdu:
                    if adv_type not in SCANNABLE:
                        continue
                    data = rx.sender.le_legacy_advertiser.scan_response_data
            if self.filter_duplicates:
                key = (report.address_type, bytes(report.address.address_bytes), scan_response)
                if key in self.reported:
                    continue
                self.reported.add(key)
            if self._legacy_reports():
                if len(data) > MAX_LEGACY_DATA:
                    continue  # an extended PDU a legacy scanner cannot hear
                reports.append(
                    LegacyReportEvent.Report(
                        event_type=SCAN_RSP if scan_response else adv_type,
                        address_type=report.address_type,
                        address=report.address,
                        data=data,
                        rssi=rx.rssi,
                    )
                )
            elif legacy_pdu:
                # Fields as the spec gives them for a legacy PDU: no secondary PHY, no SID, no TX power.
                reports.append(
                    ExtReportEvent.Report(
                        event_type=EXT_TYPE_OF_LEGACY[(adv_type, scan_response)],
                        address_type=report.address_type,
                        address=report.address,
                        primary_phy=hci.Phy.LE_1M,
                        secondary_phy=0,
                        advertising_sid=ExtReportEvent.NO_ADI_FIELD_PROVIDED,
                        tx_power=ExtReportEvent.TX_POWER_INFORMATION_NOT_AVAILABLE,
                        rssi=rx.rssi,
                        periodic_advertising_interval=0,
                        direct_address_type=0,
                        direct_address=hci.Address.ANY,
                        data=data,
                    )
                )
            elif isinstance(event, ExtReportEvent):
                reports.append(dataclasses.replace(report, rssi=rx.rssi, data=data))
        if not reports:
            return None
        return LegacyReportEvent(reports) if self._legacy_reports() else ExtReportEvent(reports)

    # --- HCI commands Bumble handles too loosely -----------------------------

    def on_packet(self, packet: bytes) -> None:
        try:
            parsed = hci.HCI_Packet.from_bytes(packet)
        except Exception as error:
            # Bumble drops a command it cannot parse and the host waits for ever; a controller answers.
            if packet[0] == hci.HCI_COMMAND_PACKET and len(packet) >= 4:
                log.warning("%s: malformed command %s: %s", self.name, packet.hex(), error)
                self._complete(int.from_bytes(packet[1:3], "little"), ErrorCode.INVALID_COMMAND_PARAMETERS_ERROR)
            else:
                log.warning("%s: malformed packet %s: %s", self.name, packet.hex(), error)
            return
        self.on_hci_packet(parsed)

    def on_hci_command_packet(self, command):
        if self.model == "bt5":
            if command.op_code in EXTENDED_COMMANDS:
                self.extended_used = True
            elif command.op_code in LEGACY_COMMANDS and self.extended_used:
                if command.op_code in LEGACY_STATUS_COMMANDS:
                    return self.send_hci_packet(hci.HCI_Command_Status_Event(
                        status=ErrorCode.COMMAND_DISALLOWED_ERROR, num_hci_command_packets=1, command_opcode=command.op_code))
                return self._complete(command.op_code, ErrorCode.COMMAND_DISALLOWED_ERROR)
        if isinstance(command, hci.HCI_SyncCommand) or hasattr(self, f"on_{command.name.lower()}"):
            return super().on_hci_command_packet(command)
        # Unknown opcodes (and async commands Bumble lacks) get no reply from Bumble.
        self._complete(command.op_code, ErrorCode.UNKNOWN_HCI_COMMAND_ERROR)

    def _complete(self, opcode: int, status: int):
        self.send_hci_packet(hci.HCI_Command_Complete_Event(
            num_hci_command_packets=1, command_opcode=opcode, return_parameters=Status(status)))

    def on_hci_reset_command(self, command):
        # Bumble's Reset changes nothing; a real one stops the radio and forgets the setup.
        self.le_legacy_advertiser.stop()
        self.le_legacy_advertiser = LabLegacyAdvertiser(self)
        for advertising_set in self.advertising_sets.values():
            advertising_set.stop()
        self.advertising_sets.clear()
        self.le_scan_enable = False
        self.filter_duplicates = False
        self.reported.clear()
        self.legacy_scanning = True
        for name in ("le_scan_type", "le_scan_interval", "le_scan_window", "le_scan_own_address_type",
                     "le_scanning_filter_policy", "pending_le_connection"):
            self.__dict__.pop(name, None)  # back to the class defaults
        self.pending_periodic_advertising_syncs.clear()
        self.established_periodic_advertising_syncs.clear()
        self.event_mask = DEFAULT_EVENT_MASK
        self.le_event_mask = DEFAULT_LE_EVENT_MASK
        self.random_address = hci.Address("00:00:00:00:00:00")
        self.extended_used = False
        self.air.end_connections(self, notify_self=False)
        return super().on_hci_reset_command(command)

    def on_hci_le_set_random_address_command(self, command):
        if self.le_legacy_advertiser.enabled or self.le_scan_enable or self.pending_le_connection:
            return Status(ErrorCode.COMMAND_DISALLOWED_ERROR)
        if command.random_address.address_bytes == bytes(6):
            return Status(ErrorCode.INVALID_COMMAND_PARAMETERS_ERROR)
        return super().on_hci_le_set_random_address_command(command)

    def on_hci_le_set_advertising_parameters_command(self, command):
        if self.le_legacy_advertiser.enabled:
            return Status(ErrorCode.COMMAND_DISALLOWED_ERROR)
        return super().on_hci_le_set_advertising_parameters_command(command)

    def on_hci_le_set_advertising_enable_command(self, command):
        advertiser = self.le_legacy_advertiser
        if (command.advertising_enable and advertiser.own_address_type == hci.OwnAddressType.RANDOM
                and self.random_address.address_bytes == bytes(6)):
            return Status(ErrorCode.INVALID_COMMAND_PARAMETERS_ERROR)
        if command.advertising_enable and advertiser.enabled:
            return Status(ErrorCode.SUCCESS)  # already on: don't restart the interval
        return super().on_hci_le_set_advertising_enable_command(command)

    def on_hci_le_set_scan_enable_command(self, command):
        self.legacy_scanning = True
        if command.le_scan_enable and not self.le_scan_enable:
            self.reported.clear()
        return super().on_hci_le_set_scan_enable_command(command)

    def on_hci_le_set_extended_scan_parameters_command(self, command):
        if self.le_scan_enable:
            return Status(ErrorCode.COMMAND_DISALLOWED_ERROR)
        if command.scan_types:  # Bumble does not keep the scan type
            self.le_scan_type = command.scan_types[0]
        return super().on_hci_le_set_extended_scan_parameters_command(command)

    def on_hci_le_set_extended_scan_enable_command(self, command):
        self.legacy_scanning = False
        if command.enable and not self.le_scan_enable:
            self.reported.clear()
        return super().on_hci_le_set_extended_scan_enable_command(command)


class HciPort(asyncio.Protocol):
    """One client connection to a controller's H4 socket."""

    def __init__(self, host: "Host"):
        self.host = host
        self.transport = None
        self.parser = None
        self.dropping = False

    def connection_made(self, transport):
        self.transport = transport
        if self.host.removed:
            # The controller is unplugged: the socket answers, the device does not.
            transport.close()
            return
        previous = self.host.client
        if previous is not None:
            log.info("%s: new client replaces the previous one", self.host.name)
            previous.transport.close()
        self.host.client = self
        # A parser per connection: bytes a dead client left half-sent must not prefix the next one's.
        self.parser = PacketParser(self.host.controller)
        self.host.controller.host = self
        log.info("%s: client connected", self.host.name)

    def data_received(self, data):
        if self.host.client is not self:
            return
        try:
            self.parser.feed_data(data)
        except Exception as error:  # an H4 stream out of step cannot be resynchronised
            log.warning("%s: bad H4 data from client (%s); closing it", self.host.name, error)
            self.transport.close()

    def connection_lost(self, exc):
        if self.host.client is self:
            self.host.client = None
            self.host.controller.host = None
            log.info("%s: client disconnected", self.host.name)

    # Packet sink for the controller: events and ACL data to the host.
    def on_packet(self, packet: bytes):
        if self.transport.is_closing():
            return
        if self.transport.get_write_buffer_size() > MAX_CLIENT_BACKLOG:
            if not self.dropping:
                log.warning("%s: client is not reading; dropping events", self.host.name)
            self.dropping = True
            return
        self.dropping = False
        self.transport.write(packet)


class VhciPort:
    """A controller attached to the kernel through /dev/vhci: the kernel is its
    host and creates an hciN for it (drivers/bluetooth/hci_vhci.c)."""

    VENDOR_PACKET = 0xFF
    PRIMARY = 0x00

    def __init__(self, controller):
        self.fd = os.open("/dev/vhci", os.O_RDWR | os.O_CLOEXEC)
        try:
            # Within a second of the open, or the kernel creates a device of its own choosing.
            os.write(self.fd, bytes([self.VENDOR_PACKET, self.PRIMARY]))
            reply = os.read(self.fd, 4)  # ff, the type, the new device's index (LE 16)
        except OSError:
            os.close(self.fd)
            raise
        if len(reply) != 4 or reply[0] != self.VENDOR_PACKET:
            os.close(self.fd)
            raise OSError(f"/dev/vhci answered {reply.hex()} to the create request")
        self.index = reply[2] | reply[3] << 8
        self.parser = PacketParser(controller)
        controller.host = self
        asyncio.get_running_loop().add_reader(self.fd, self.readable)

    def readable(self):
        try:
            data = os.read(self.fd, 4096)  # one packet per read
        except OSError as error:
            log.warning("vhci read failed: %s", error)
            return
        if data:
            self.parser.feed_data(data)

    # Packet sink for the controller: events and ACL data to the kernel.
    def on_packet(self, packet: bytes):
        if self.fd >= 0:  # the controller may still emit while the lab shuts down
            os.write(self.fd, packet)

    def close(self):
        asyncio.get_running_loop().remove_reader(self.fd)
        os.close(self.fd)
        self.fd = -1


@dataclasses.dataclass
class Host:
    name: str
    controller: LabController
    path: str
    server: asyncio.AbstractServer = None
    vhci: VhciPort = None  # with --vhci
    client: HciPort = None
    rssi: int = None  # override, None for the default
    removed: bool = False  # "controller HOST remove": as if the adapter were unplugged


class Lab:
    def __init__(self, directory: str, names, reports: str, model: str = "legacy", vhci: bool = False):
        self.vhci = vhci
        self.directory = directory
        self.air = Air()
        self.hosts = {}
        for index, name in enumerate(names, start=1):
            # Public addresses from the documentation range 00:00:5E:00:53:xx: never a real device.
            controller = LabController(name, self.air, f"00:00:5E:00:53:{index:02X}", reports, model)
            self.hosts[name] = Host(name, controller, os.path.join(directory, f"{name}.hci"))
        self.control_path = os.path.join(directory, "control.sock")
        self.pid_path = os.path.join(directory, "ble-lab.pid")
        self.control_server = None
        self.control_writers = set()
        self.stopping = asyncio.Event()

    async def run(self):
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.stopping.set)
        try:
            for host in self.hosts.values():
                if self.vhci:
                    # The kernel is the client: it creates hciN and drives the controller.
                    host.vhci = VhciPort(host.controller)
                    log.info("%s: attached as hci%d", host.name, host.vhci.index)
                    continue
                host.server = await loop.create_unix_server(lambda host=host: HciPort(host), host.path)
            self.control_server = await asyncio.start_unix_server(self.serve_control, self.control_path)
            temporary = self.pid_path + ".tmp"
            with open(temporary, "w") as file:
                file.write(f"{os.getpid()}\n")
            os.replace(temporary, self.pid_path)
            print("ready", flush=True)
            log.info("serving %s in %s", " ".join(self.hosts), self.directory)
            await self.stopping.wait()
        finally:
            self.shut_down()

    def shut_down(self):
        for host in self.hosts.values():
            host.controller.le_legacy_advertiser.stop()
            for advertising_set in host.controller.advertising_sets.values():
                advertising_set.stop()
            if host.server is not None:
                host.server.close()
            if host.vhci is not None:
                host.vhci.close()
            if host.client is not None:
                host.client.transport.close()
        if self.control_server is not None:
            self.control_server.close()
        for writer in list(self.control_writers):
            writer.close()
        paths = [host.path for host in self.hosts.values()] + [self.control_path]
        if self.pid_file_is_ours():
            paths.append(self.pid_path)
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        log.info("stopped")

    def pid_file_is_ours(self) -> bool:
        try:
            with open(self.pid_path) as file:
                return file.read().strip() == str(os.getpid())
        except OSError:
            return False

    async def serve_control(self, reader, writer):
        self.control_writers.add(writer)
        try:
            while not self.stopping.is_set():
                try:
                    line = await reader.readline()
                except ValueError:  # longer than the stream's limit
                    writer.write(b"error line too long\n")
                    break
                if not line:
                    break
                text = None
                try:
                    text = line.decode("utf-8").strip()
                except UnicodeDecodeError:
                    reply = "error not UTF-8 text"
                else:
                    if not text:
                        continue
                    try:
                        reply = self.execute(text)
                    except Exception as error:  # a lab bug must not take the air down
                        log.exception("control command %r failed", text)
                        reply = f"error internal: {error}"
                writer.write(reply.encode() + b"\n")
                await writer.drain()
                if reply == "ok stopping":
                    self.stopping.set()
        except (ConnectionError, OSError):
            pass
        finally:
            self.control_writers.discard(writer)
            writer.close()

    def execute(self, text: str) -> str:
        words = text.split()
        command, arguments = words[0].lower(), words[1:]
        if command == "help":
            return "ok commands: range HOST out|in; rssi HOST DBM|reset; controller HOST remove|restore; status; help; quit"
        if command == "controller":
            if len(arguments) != 2 or arguments[1] not in ("remove", "restore"):
                return "error usage: controller HOST remove|restore"
            host = self.hosts.get(arguments[0])
            if host is None:
                return self.unknown_host(arguments[0])
            host.removed = arguments[1] == "remove"
            # Unplugged: off the air, and its client loses the connection.
            self.air.set_in_range(host.controller, not host.removed)
            if host.removed and host.client is not None:
                host.client.transport.close()
            log.info("%s: controller %s", host.name, "removed" if host.removed else "restored")
            return f"ok {host.name} controller={'removed' if host.removed else 'present'}"
        if command == "quit":
            return "ok stopping" if not arguments else "error usage: quit"
        if command == "status":
            if arguments:
                return "error usage: status"
            return "ok " + "; ".join(self.describe(host) for host in self.hosts.values())
        if command == "range":
            if len(arguments) != 2 or arguments[1] not in ("in", "out"):
                return "error usage: range HOST out|in"
            host = self.hosts.get(arguments[0])
            if host is None:
                return self.unknown_host(arguments[0])
            self.air.set_in_range(host.controller, arguments[1] == "in")
            log.info("%s: %s", host.name, "back in range" if arguments[1] == "in" else "out of range")
            return f"ok {host.name} range={arguments[1]}"
        if command == "rssi":
            if len(arguments) != 2:
                return "error usage: rssi HOST DBM|reset"
            host = self.hosts.get(arguments[0])
            if host is None:
                return self.unknown_host(arguments[0])
            if arguments[1] == "reset":
                host.rssi = None
                self.air.rssi.pop(host.controller, None)
                return f"ok {host.name} rssi=default"
            try:
                dbm = int(arguments[1])
            except ValueError:
                dbm = None
            if dbm not in RSSI_RANGE:
                return f"error rssi must be an integer from {RSSI_RANGE.start} to {RSSI_RANGE.stop - 1} dBm, or reset"
            host.rssi = dbm
            self.air.rssi[host.controller] = dbm
            log.info("%s: heard at %d dBm", host.name, dbm)
            return f"ok {host.name} rssi={dbm}"
        return f"error unknown command {command!r} (try help)"

    def unknown_host(self, name: str) -> str:
        return f"error unknown host {name!r} (hosts: {' '.join(self.hosts)})"

    def describe(self, host: Host) -> str:
        controller = host.controller
        return " ".join([
            host.name,
            "range=" + ("out" if controller in self.air.out_of_range else "in"),
            "controller=" + ("removed" if host.removed else "present"),
            "rssi=" + ("default" if host.rssi is None else str(host.rssi)),
            "client=" + ("yes" if host.client is not None else "no"),
            "adv=" + ("on" if controller.is_advertising else "off"),
            "scan=" + ("on" if controller.le_scan_enable else "off"),
        ])


async def serve(directory: str, names, reports: str, model: str, vhci: bool):
    # Bumble's controllers need the running loop from their constructor on.
    await Lab(directory, names, reports, model, vhci).run()


def running_lab_pid(pid_path: str):
    """The pid of a live ble-lab that owns pid_path, if any."""
    try:
        with open(pid_path) as file:
            pid = int(file.read().strip())
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            command_line = file.read()
    except (OSError, ValueError):
        return None
    return pid if b"ble-lab" in command_line and pid != os.getpid() else None


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Emulated Bluetooth LE controllers on one shared air, one H4 Unix socket per host.",
        epilog="Control socket DIR/control.sock: range HOST out|in, rssi HOST DBM|reset, status, help, quit.",
    )
    parser.add_argument("--dir", required=True, help="directory for HOST.hci, control.sock and ble-lab.pid")
    parser.add_argument("--reports", choices=("auto", "legacy", "extended"), default="auto",
                        help="advertising report format: auto follows the scan command the host used (default)")
    parser.add_argument("--model", choices=("legacy", "bt5"), default="legacy",
                        help="bt5: announce extended advertising and scanning, refuse legacy commands after them (0x0C)")
    parser.add_argument("--vhci", action="store_true", help="attach the controllers to the kernel through /dev/vhci")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every HCI packet (Bumble's debug log)")
    parser.add_argument("hosts", nargs="+", metavar="HOST")
    args = parser.parse_args()

    logging.basicConfig(stream=sys.stderr, format="%(name)s: %(message)s",
                        level=logging.DEBUG if args.verbose else logging.WARNING)
    log.setLevel(logging.DEBUG if args.verbose else logging.INFO)

    for name in args.hosts:
        if not HOST_NAME.match(name):
            parser.error(f"bad host name {name!r}: use letters, digits, '-' and '_', at most 32")
    if len(set(args.hosts)) != len(args.hosts):
        parser.error("a host is named twice")
    if len(args.hosts) > 254:
        parser.error("at most 254 hosts")
    directory = os.path.abspath(args.dir)
    longest = max([*(f"{name}.hci" for name in args.hosts), "control.sock"], key=len)
    if len(os.path.join(directory, longest).encode()) > SUN_PATH_MAX:
        parser.error(f"socket paths under {directory} exceed {SUN_PATH_MAX} bytes; use a shorter --dir")
    os.makedirs(directory, exist_ok=True)
    pid = running_lab_pid(os.path.join(directory, "ble-lab.pid"))
    if pid is not None:
        print(f"ble-lab: already running in {directory} (pid {pid})", file=sys.stderr)
        return 1

    try:
        asyncio.run(serve(directory, args.hosts, args.reports, args.model, args.vhci))
    except OSError as error:
        print(f"ble-lab: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
