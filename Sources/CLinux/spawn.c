#define _GNU_SOURCE
#include "clinux.h"
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int cm_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

/* In the child, before anything else: die with the parent's thread if asked (and if the parent
   is already gone), then every signal unblocked and at its default action, as a service starts,
   whatever the calling thread blocked or ignored. Only async-signal-safe calls. */
static void child_begins(pid_t parent, int kill_with_parent) {
    if (kill_with_parent) {
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
}

/* In the child: exec failed, or a step before it did. Say why through the report pipe. */
static void child_fails(int report) {
    int code = errno;
    (void)!write(report, &code, sizeof code);
    _exit(127);
}

/* In the parent: a successful exec closes the report pipe; a failure writes its errno there. */
static pid_t parent_learns(int report[2], pid_t pid) {
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

/* fork with the report pipe made; -1 (errno kept) when either fails. */
static pid_t fork_reporting(int report[2]) {
    if (pipe2(report, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(report[0]);
        close(report[1]);
        errno = saved;
    }
    return pid;
}

pid_t cm_spawn(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd, int stderr_fd,
               int keep_fd, int kill_with_parent) {
    int report[2];
    pid_t parent = getpid();
    pid_t pid = fork_reporting(report);
    if (pid < 0) return -1;
    if (pid == 0) {
        child_begins(parent, kill_with_parent);
        if (stdin_fd >= 0 && dup2(stdin_fd, 0) < 0) child_fails(report[1]);
        if (stdout_fd >= 0 && dup2(stdout_fd, 1) < 0) child_fails(report[1]);
        if (stderr_fd >= 0 && dup2(stderr_fd, 2) < 0) child_fails(report[1]);
        if (keep_fd > 2) {
            int flags = fcntl(keep_fd, F_GETFD);
            if (flags < 0 || fcntl(keep_fd, F_SETFD, flags & ~FD_CLOEXEC) < 0) child_fails(report[1]);
        }
        execve(path, argv, envp);
        child_fails(report[1]);
    }
    return parent_learns(report, pid);
}

pid_t cm_spawn_sandboxed(const char *path, char *const argv[], char *const envp[], const cm_sandbox *sandbox) {
    int report[2];
    pid_t parent = getpid();
    pid_t pid = fork_reporting(report);
    if (pid < 0) return -1;
    if (pid == 0) {
        child_begins(parent, sandbox->kill_with_parent);
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
    failed:
        child_fails(report[1]);
    }
    return parent_learns(report, pid);
}
