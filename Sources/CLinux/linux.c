#define _GNU_SOURCE
#include <sys/prctl.h>
#include "CLinux.h"
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/tcp.h>
#include <netinet/in.h>

#define HANDOFF_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

int handoff_memfd_create(const char *name) {
    return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

int handoff_memfd_seal(int fd) {
    return fcntl(fd, F_ADD_SEALS, HANDOFF_SEALS);
}

int handoff_memfd_is_sealed(int fd) {
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0) return -1;
    return (seals & HANDOFF_SEALS) == HANDOFF_SEALS ? 1 : 0;
}

ssize_t handoff_send_with_fds(int socket, const void *bytes, size_t length, const int *fds, int count, int flags) {
    if (count < 0 || count > HANDOFF_MAX_PASSED_FDS || length == 0) {
        errno = EINVAL;
        return -1;
    }
    union {
        char buffer[CMSG_SPACE(sizeof(int) * HANDOFF_MAX_PASSED_FDS)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct iovec iov = { .iov_base = (void *)bytes, .iov_len = length };
    struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (count > 0) {
        message.msg_control = control.buffer;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * count);
        memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
    }
    return sendmsg(socket, &message, MSG_NOSIGNAL | flags);
}

ssize_t handoff_recv_with_fds(int socket, void *bytes, size_t length, int *fds, int capacity, int *count, int *truncated, int flags) {
    union {
        char buffer[CMSG_SPACE(sizeof(int) * 16)];
        struct cmsghdr align;
    } control;
    struct iovec iov = { .iov_base = bytes, .iov_len = length };
    struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1,
                              .msg_control = control.buffer, .msg_controllen = sizeof control.buffer };
    *count = 0;
    *truncated = 0;
    ssize_t received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC | flags);
    if (received < 0) return received;
    if (message.msg_flags & MSG_CTRUNC) *truncated = 1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int passed = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        const unsigned char *data = CMSG_DATA(header);
        for (int i = 0; i < passed; i++) {
            int fd;
            memcpy(&fd, data + sizeof(int) * i, sizeof fd);
            if (*count < capacity) {
                fds[(*count)++] = fd;
            } else {
                close(fd);
                *truncated = 1;
            }
        }
    }
    return received;
}

int handoff_netlink_route_changes(void) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return -1;
    struct sockaddr_nl address;
    memset(&address, 0, sizeof address);
    address.nl_family = AF_NETLINK;
    address.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int handoff_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

int handoff_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

long long handoff_tcp_bytes_received(int fd) {
    struct tcp_info info;
    socklen_t length = sizeof info;
    memset(&info, 0, sizeof info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return -1;
    /* Kernels before 4.1 fill less of the structure: the field is then absent. */
    if (length < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received) return -1;
    return (long long)info.tcpi_bytes_received;
}

/* Swift concurrency's global-executor hook, a variable of libswift_Concurrency. Named here
 * so the linker resolves it: dlsym finds it only in the dynamic symbol table, which a
 * binary linked with the static Swift runtime (the package's) does not export. */
extern void *swift_task_enqueueGlobal_hook;

void **handoff_enqueue_global_hook(void) {
    return &swift_task_enqueueGlobal_hook;
}

int handoff_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int handoff_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}
