#ifndef MENTORMATE_CPOSIX_H
#define MENTORMATE_CPOSIX_H
#include <sys/types.h>

/// The credentials of the process at the other end of a Unix socket (SO_PEERCRED).
/// Returns 0, or -1 with errno set.
int cposix_peer_cred(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// accept4(fd, NULL, NULL, flags): Glibc's Swift module does not show accept4 (_GNU_SOURCE).
/// Returns the new descriptor, or -1 with errno set.
int cposix_accept4(int fd, int flags);

/// A netlink route socket (NETLINK_ROUTE, close-on-exec, non-blocking) subscribed to the
/// kernel's address and link notifications (RTM_NEWADDR/DELADDR for IPv4 and IPv6,
/// RTM_NEWLINK/DELLINK): readable whenever an interface's addresses or state change. The caller
/// only drains it (`cposix_netlink_drain`) and re-reads the addresses with getifaddrs, so no
/// netlink message is parsed in Swift. Returns the descriptor, or -1 with errno set.
int cposix_netlink_route_open(void);

/// Reads and discards every pending message of a non-blocking netlink socket. Returns the
/// number of messages read (0: nothing pending), or -1 with errno set (ENOBUFS: the kernel
/// dropped notifications, so the caller must re-read everything anyway).
int cposix_netlink_drain(int fd);

#endif
