#define _GNU_SOURCE
#include "clinux.h"
#include <malloc.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

int cm_signalfd(const sigset_t *mask) { return signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK); }

int cm_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    return read(fd, &info, sizeof info) == (ssize_t)sizeof info ? (int)info.ssi_signo : -1;
}

int cm_ppoll(struct pollfd *fds, unsigned long count, const struct timespec *timeout) {
    return ppoll(fds, (nfds_t)count, timeout, NULL);
}

int cm_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int cm_tty_exclusive(int fd) { return ioctl(fd, TIOCEXCL); }

int cm_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int cm_epoll_add_input(int epfd, int fd) {
    struct epoll_event event = { .events = EPOLLIN, .data.fd = fd };
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

uint64_t cm_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

pid_t cm_gettid(void) { return gettid(); }

/* prctl, not pthread_setname_np: for the calling thread glibc's version opens
   /proc/self/task/TID/comm, which a plugin host's seccomp filter refuses. */
int cm_name_this_thread(const char *name) { return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }

clockid_t cm_thread_cpu_clock(void) {
    clockid_t clock;
    /* Not CLOCK_THREAD_CPUTIME_ID on failure: read by another thread, that is the reader's own. */
    if (pthread_getcpuclockid(pthread_self(), &clock) != 0) return (clockid_t)-1;
    return clock;
}

uint64_t cm_clock_ns(clockid_t clock) {
    struct timespec now;
    if (clock_gettime(clock, &now) != 0) return UINT64_MAX;
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

int cm_malloc_mmap_threshold(size_t bytes) { return mallopt(M_MMAP_THRESHOLD, (int)bytes); }

uint64_t cm_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)info.uordblks + (uint64_t)info.hblkhd;
}
