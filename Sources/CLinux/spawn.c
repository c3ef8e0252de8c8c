#define _GNU_SOURCE
#include "clinux.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int cm_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

pid_t cm_spawn(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd, int stderr_fd,
               int keep_fd, int kill_with_parent) {
    /* The child reports a failed exec through this pipe; a successful exec closes it. */
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
        if (kill_with_parent) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(127);
        }
        /* A service starts with every signal unblocked and at its default action; so does this
           child, whatever this thread blocked or ignored. */
        struct sigaction action;
        action.sa_handler = SIG_DFL;
        action.sa_flags = 0;
        sigemptyset(&action.sa_mask);
        for (int signal = 1; signal < NSIG; signal++) sigaction(signal, &action, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (stdin_fd >= 0 && dup2(stdin_fd, 0) < 0) goto failed;
        if (stdout_fd >= 0 && dup2(stdout_fd, 1) < 0) goto failed;
        if (stderr_fd >= 0 && dup2(stderr_fd, 2) < 0) goto failed;
        if (keep_fd > 2) {
            int flags = fcntl(keep_fd, F_GETFD);
            if (flags < 0 || fcntl(keep_fd, F_SETFD, flags & ~FD_CLOEXEC) < 0) goto failed;
        }
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
