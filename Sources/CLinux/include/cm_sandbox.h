#ifndef COINMECH_SANDBOX_H
#define COINMECH_SANDBOX_H
/* What a plugin host process needs from Linux: its channel (a SOCK_SEQPACKET socketpair that
   can carry a descriptor), a pidfd to watch it die, and a start with nothing it should not have. */
#include <stddef.h>
#include <sys/types.h>

/* socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC): message boundaries kept, peer death seen. */
int cm_seqpacket_pair(int fds[2]);
/* send() of one message with MSG_NOSIGNAL, and `fd` attached (SCM_RIGHTS) when >= 0. */
ssize_t cm_send_message(int socket, const void *buffer, size_t length, int fd, int dont_wait);
/* recv() of one message with MSG_DONTWAIT when asked; an attached descriptor (close-on-exec) in
   *fd (else -1). A message longer than `length` is an error (EMSGSIZE). */
ssize_t cm_recv_message(int socket, void *buffer, size_t length, int *fd, int dont_wait);
/* A sealed in-memory copy of the open file `source` (memfd, close-on-exec; no write, grow or
   shrink can change it): what a plugin host is handed, openable through /proc/self/fd by any
   user, unlike the daemon's private 0700 copy. -1 with errno on error. */
int cm_sealed_copy(int source, const char *name);

/* pidfd_open(pid, 0): readable once the process has exited. */
int cm_pidfd_open(pid_t pid);

typedef struct cm_sandbox {
    int channel_fd;        /* becomes descriptor 3 in the child */
    int output_fd;         /* becomes descriptors 1 and 2 (-1: /dev/null) */
    uid_t uid;             /* run as this user (and gid, without supplementary groups); (uid_t)-1 keeps the caller's */
    gid_t gid;
    int kill_with_parent;  /* SIGKILL when the calling thread ends (PR_SET_PDEATHSIG) */
} cm_sandbox;

/* Starts `path` with every signal unblocked and at its default action, stdin on /dev/null, the
   channel on descriptor 3, every other descriptor closed at exec, and PR_SET_NO_NEW_PRIVS.
   Returns the pid, or -1 with errno set (also when exec or a user change failed in the child). */
pid_t cm_spawn_sandboxed(const char *path, char *const argv[], char *const envp[], const cm_sandbox *sandbox);

#endif
