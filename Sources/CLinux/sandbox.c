#define _GNU_SOURCE
#include "cm_sandbox.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

int cm_seqpacket_pair(int fds[2]) { return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds); }

ssize_t cm_send_message(int socket, const void *buffer, size_t length, int fd, int dont_wait) {
    struct iovec part = {.iov_base = (void *)buffer, .iov_len = length};
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&control, 0, sizeof control);
        message.msg_control = control.space;
        message.msg_controllen = sizeof control.space;
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(header), &fd, sizeof fd);
    }
    ssize_t sent;
    do {
        sent = sendmsg(socket, &message, MSG_NOSIGNAL | (dont_wait ? MSG_DONTWAIT : 0));
    } while (sent < 0 && errno == EINTR);
    return sent;
}

ssize_t cm_recv_message(int socket, void *buffer, size_t length, int *fd, int dont_wait) {
    *fd = -1;
    struct iovec part = {.iov_base = buffer, .iov_len = length};
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space};
    ssize_t got;
    do {
        got = recvmsg(socket, &message, MSG_CMSG_CLOEXEC | (dont_wait ? MSG_DONTWAIT : 0));
    } while (got < 0 && errno == EINTR);
    if (got < 0) return got;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) memcpy(fd, CMSG_DATA(header), sizeof *fd);
    }
    if (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        if (*fd >= 0) close(*fd);
        *fd = -1;
        errno = EMSGSIZE;
        return -1;
    }
    return got;
}

int cm_sealed_copy(int source, const char *name) {
    int copy = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (copy < 0) return -1;
    char buffer[65536];
    off_t offset = 0;
    for (;;) {
        ssize_t got = pread(source, buffer, sizeof buffer, offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) goto failed;
        if (got == 0) break;
        for (ssize_t done = 0; done < got;) {
            ssize_t put = write(copy, buffer + done, (size_t)(got - done));
            if (put < 0 && errno == EINTR) continue;
            if (put <= 0) goto failed;
            done += put;
        }
        offset += got;
    }
    if (fcntl(copy, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) goto failed;
    return copy;
failed:;
    int saved = errno;
    close(copy);
    errno = saved;
    return -1;
}

int cm_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
