#ifndef COINMECH_CLINUX_H
#define COINMECH_CLINUX_H
/* Linux calls Swift's Glibc module leaves out (they need _GNU_SOURCE), wrapped in plain C. */
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "cm_breadcrumb.h"
#include "cm_sandbox.h"

/* signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK): a descriptor that becomes readable on the signals in mask. */
int cm_signalfd(const sigset_t *mask);
/* Reads one pending signal from a signalfd; returns its number, or -1. */
int cm_signalfd_read(int fd);
/* ppoll with a relative timeout and no signal mask change. */
int cm_ppoll(struct pollfd *fds, unsigned long count, const struct timespec *timeout);

/* The peer of a Unix stream socket (SO_PEERCRED). Returns 0 on success. */
int cm_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/* ioctl(fd, TIOCEXCL): no further opens of this tty (except by root). Returns 0 on success. */
int cm_tty_exclusive(int fd);

/* CLOCK_MONOTONIC in nanoseconds: the clock of every deadline, heartbeat and kernel GPIO timestamp. */
uint64_t cm_monotonic_ns(void);

/* The calling thread's id (gettid) and its CPU-time clock (pthread_getcpuclockid): what another
   thread of the process needs to see how much of the machine this one has had (-1: no clock). */
pid_t cm_gettid(void);
/* Names the calling thread (prctl PR_SET_NAME: at most 15 bytes are kept, the rest cut). 0 or -1. */
int cm_name_this_thread(const char *name);
clockid_t cm_thread_cpu_clock(void);
/* clock_gettime(clock) in nanoseconds; UINT64_MAX if it cannot be read. */
uint64_t cm_clock_ns(clockid_t clock);

/* An epoll instance (close-on-exec), and adding a descriptor to it for input. -1 on error. */
int cm_epoll_create(void);
int cm_epoll_add_input(int epfd, int fd);

/* mallopt(M_MMAP_THRESHOLD, bytes): blocks of `bytes` or more are mapped on their own and
   returned to the system when freed. Setting it also stops glibc from raising the threshold after
   each large free (up to 32 MiB), which let freed large blocks stay in the heap. 1 on success. */
int cm_malloc_mmap_threshold(size_t bytes);

/* Bytes the allocator has handed out and not taken back (mallinfo2's uordblks + hblkhd). */
uint64_t cm_heap_in_use(void);

/* pipe2(fds, O_CLOEXEC): a pipe whose ends are not inherited by exec'd programs. */
int cm_pipe_cloexec(int fds[2]);

/* Starts `path` (argv, envp: NULL-terminated) in a child process with every signal unblocked and
   at its default action, stdin, stdout and stderr on the given descriptors (-1 leaves them), and
   `keep_fd` (> 2, or -1) left open across exec; every other descriptor of the caller should be
   close-on-exec. With `kill_with_parent`, the child gets SIGKILL when the calling *thread* ends
   (PR_SET_PDEATHSIG): call it from a thread that lives as long as the child should. Returns the
   pid, or -1 with errno set (also when exec failed). */
pid_t cm_spawn(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd, int stderr_fd,
               int keep_fd, int kill_with_parent);

#endif
