#define _GNU_SOURCE
#include "cposix.h"
#include <stddef.h>
#include <sys/socket.h>

int cposix_peer_cred(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int cposix_accept4(int fd, int flags) {
    return accept4(fd, NULL, NULL, flags);
}
