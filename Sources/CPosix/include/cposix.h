#ifndef MENTORMATE_CPOSIX_H
#define MENTORMATE_CPOSIX_H
#include <sys/types.h>

/// The credentials of the process at the other end of a Unix socket (SO_PEERCRED).
/// Returns 0, or -1 with errno set.
int cposix_peer_cred(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// accept4(fd, NULL, NULL, flags): Glibc's Swift module does not show accept4 (_GNU_SOURCE).
/// Returns the new descriptor, or -1 with errno set.
int cposix_accept4(int fd, int flags);

#endif
