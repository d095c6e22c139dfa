#ifndef HANDOFF_CBLUETOOTH_SHIM_H
#define HANDOFF_CBLUETOOTH_SHIM_H
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>

/* Opens a raw HCI socket bound to device `dev_id` that receives every event
 * (libbluetooth's filter helpers are macros and inline functions, which Swift
 * cannot call). Returns the descriptor, or -errno. */
static inline int handoff_hci_open_raw(int dev_id) {
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    if (fd < 0) return -errno;
    struct sockaddr_hci address;
    memset(&address, 0, sizeof(address));
    address.hci_family = AF_BLUETOOTH;
    address.hci_dev = dev_id;
    address.hci_channel = HCI_CHANNEL_RAW;
    if (bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    struct hci_filter filter;
    hci_filter_clear(&filter);
    hci_filter_set_ptype(HCI_EVENT_PKT, &filter);
    hci_filter_all_events(&filter);
    if (setsockopt(fd, SOL_HCI, HCI_FILTER, &filter, sizeof(filter)) < 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}
#endif
