#ifndef HANDOFF_CBLUETOOTH_SHIM_H
#define HANDOFF_CBLUETOOTH_SHIM_H
/* BlueZ's headers only: what is used here is constants, structures and inline functions, so
 * libbluetooth is not linked (every program of ours is one executable, and would load it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>

/* The number of controller `name` ("hciN") when the kernel has it and it is up, else -1 with
 * errno set: libbluetooth's hci_devid answers the same for such a name. */
static inline int handoff_hci_device_id(const char *name) {
    if (strncmp(name, "hci", 3) != 0 || name[3] < '0' || name[3] > '9') {
        errno = ENODEV;
        return -1;
    }
    char *end;
    long id = strtol(name + 3, &end, 10);
    if (*end != '\0' || id > 0xFFFF) {
        errno = ENODEV;
        return -1;
    }
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    if (fd < 0) return -1;
    struct hci_dev_info info;
    memset(&info, 0, sizeof(info));
    info.dev_id = (uint16_t)id;
    int result = ioctl(fd, HCIGETDEVINFO, (void *)&info);
    int error = errno;
    close(fd);
    if (result < 0) {
        errno = error;
        return -1;
    }
    if (!hci_test_bit(HCI_UP, &info.flags)) {
        errno = ENETDOWN;
        return -1;
    }
    return (int)id;
}

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
