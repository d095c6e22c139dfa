#ifndef HANDOFF_CLINUX_H
#define HANDOFF_CLINUX_H
#include <stddef.h>
#include <sys/types.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>

/* Linux calls and macros Swift's Glibc module does not import:
   memfd_create (needs _GNU_SOURCE), the CMSG_* macros of SCM_RIGHTS, epoll, eventfd and signalfd. */

/* memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING); -1 and errno on failure. */
int handoff_memfd_create(const char *name);

/* Seals a memfd against writes, shrinking and growing, and against further
   seals. Fails (EBUSY) while a writable shared mapping of it exists. */
int handoff_memfd_seal(int fd);

/* 1 when fd carries at least the seals handoff_memfd_seal adds, 0 when not,
   -1 and errno when it cannot be asked (not a memfd). */
int handoff_memfd_is_sealed(int fd);

/* sendmsg of `length` bytes with up to `count` descriptors attached
   (SCM_RIGHTS, count <= HANDOFF_MAX_PASSED_FDS); MSG_NOSIGNAL and `flags`
   (MSG_DONTWAIT on the event loop). Returns bytes sent. */
ssize_t handoff_send_with_fds(int socket, const void *bytes, size_t length, const int *fds, int count, int flags);

/* recvmsg into `bytes`; descriptors that came with these bytes are stored
   (close-on-exec) in `fds`, their number in `*count`. A message that carried
   more than `capacity` descriptors has the extras closed and `*truncated` set.
   `flags`: MSG_DONTWAIT on the event loop, else 0. */
ssize_t handoff_recv_with_fds(int socket, void *bytes, size_t length, int *fds, int capacity, int *count, int *truncated, int flags);

#define HANDOFF_MAX_PASSED_FDS 4

/* Names the calling thread (prctl PR_SET_NAME, a variadic call Swift cannot make);
   the kernel keeps the first 15 bytes. */
int handoff_set_thread_name(const char *name);

/* pipe2(fds, O_CLOEXEC): no other thread's child inherits the ends (needs _GNU_SOURCE). */
int handoff_pipe_cloexec(int fds[2]);
/* posix_spawn_file_actions_addclosefrom_np (glibc 2.34), declared only with _GNU_SOURCE:
   the child closes every descriptor from `from` on. */
int handoff_spawn_close_from(posix_spawn_file_actions_t *actions, int from);
/* pidfd_open(2) (Linux 5.3): readable once the process ended; -1 with errno otherwise. */
int handoff_pidfd_open(pid_t pid);

/* The address of Swift concurrency's global-executor hook (swift_task_enqueueGlobal_hook). */
void **handoff_enqueue_global_hook(void);

/* A route netlink socket (close-on-exec) subscribed to link and IPv4/IPv6 address
   changes (RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR); -1 and errno. */
int handoff_netlink_route_changes(void);

/* Bytes the kernel received on a TCP socket so far (TCP_INFO's tcpi_bytes_received), -1 when
   it cannot say: whether a connection has sent anything, whoever read it. */
long long handoff_tcp_bytes_received(int fd);

#endif
