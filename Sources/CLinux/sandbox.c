#define _GNU_SOURCE
#include "cm_sandbox.h"
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

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

pid_t cm_spawn_sandboxed(const char *path, char *const argv[], char *const envp[], const cm_sandbox *sandbox) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(report[0]);
        close(report[1]);
        errno = saved;
        return -1;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls from here to execve. */
        if (sandbox->kill_with_parent) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(127);
        }
        struct sigaction action;
        action.sa_handler = SIG_DFL;
        action.sa_flags = 0;
        sigemptyset(&action.sa_mask);
        for (int signal = 1; signal < NSIG; signal++) sigaction(signal, &action, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0) goto failed;
        int output = sandbox->output_fd >= 0 ? sandbox->output_fd : null;
        /* The channel goes to 3; if the report pipe or the output sits there, move them first. */
        if (dup2(null, 0) < 0 || dup2(output, 1) < 0 || dup2(output, 2) < 0) goto failed;
        if (report[1] == 3) {
            int moved = fcntl(report[1], F_DUPFD_CLOEXEC, 4);
            if (moved < 0) goto failed;
            report[1] = moved;
        }
        if (sandbox->channel_fd == 3) {
            if (fcntl(3, F_SETFD, 0) < 0) goto failed;
        } else if (dup2(sandbox->channel_fd, 3) < 0) {
            goto failed;
        }
        /* Nothing else crosses exec: not the daemon's ledger, sockets, tty or pipes. */
        if (syscall(SYS_close_range, 4u, ~0u, CLOSE_RANGE_CLOEXEC) != 0) {
            for (int fd = 4; fd < 65536; fd++) if (fd != report[1]) fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        if (sandbox->gid != (gid_t)-1) {
            if (setgroups(0, NULL) != 0 || setgid(sandbox->gid) != 0) goto failed;
        }
        if (sandbox->uid != (uid_t)-1 && setuid(sandbox->uid) != 0) goto failed;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) goto failed;
        execve(path, argv, envp);
    failed:;
        int code = errno;
        (void)!write(report[1], &code, sizeof code);
        _exit(127);
    }
    close(report[1]);
    int code = 0;
    ssize_t got;
    do {
        got = read(report[0], &code, sizeof code);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof code) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        errno = code;
        return -1;
    }
    return pid;
}
