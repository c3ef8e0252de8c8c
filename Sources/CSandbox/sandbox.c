#define _GNU_SOURCE
#include "cm_plugin_sandbox.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

int cm_sandbox_network_namespace(void) { return unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ? 0 : errno; }

int cm_sandbox_limit(const cm_sandbox_limits *limits, const char **failed) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return *failed = "RLIMIT_CORE", errno;
    struct {
        int resource;
        uint64_t value;
        const char *name;
    } wanted[] = {{RLIMIT_AS, limits->address_space, "RLIMIT_AS"},
                  {RLIMIT_NOFILE, limits->open_files, "RLIMIT_NOFILE"},
                  {RLIMIT_NPROC, limits->processes, "RLIMIT_NPROC"},
                  {RLIMIT_CPU, limits->cpu_seconds, "RLIMIT_CPU"}};
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        if (wanted[i].value == 0) continue;
        struct rlimit limit = {wanted[i].value, wanted[i].value};
        if (setrlimit(wanted[i].resource, &limit) != 0) return *failed = wanted[i].name, errno;
    }
    return 0;
}

/* Landlock's rights by ABI version; the Debian 12 header knows only the first two versions. */
#define CM_FS_V1                                                                                                      \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |                      \
     LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |                   \
     LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |                       \
     LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |                    \
     LANDLOCK_ACCESS_FS_MAKE_SYM)
#define CM_FS_REFER (1ULL << 13)
#define CM_FS_TRUNCATE (1ULL << 14)
#define CM_FS_IOCTL_DEV (1ULL << 15)
#define CM_NET_BIND_TCP (1ULL << 0)
#define CM_NET_CONNECT_TCP (1ULL << 1)
#define CM_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define CM_SCOPE_SIGNAL (1ULL << 1)

struct cm_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

int cm_sandbox_landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? -errno : (int)abi;
}

static int allow_reading(int ruleset, int fd) {
    struct stat status;
    if (fstat(fd, &status) != 0) return -errno;
    struct landlock_path_beneath_attr rule = {
        .allowed_access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE |
                          (S_ISDIR(status.st_mode) ? LANDLOCK_ACCESS_FS_READ_DIR : 0),
        .parent_fd = fd,
    };
    return syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) == 0 ? 0 : -errno;
}

int cm_sandbox_landlock(char *const *readable, const char **failed) {
    int abi = cm_sandbox_landlock_abi();
    if (abi <= 0) return *failed = "landlock_create_ruleset", abi < 0 ? abi : -ENOSYS;
    struct cm_ruleset_attr attributes = {.handled_access_fs = CM_FS_V1};
    size_t size = sizeof attributes.handled_access_fs;
    if (abi >= 2) attributes.handled_access_fs |= CM_FS_REFER;
    if (abi >= 3) attributes.handled_access_fs |= CM_FS_TRUNCATE;
    if (abi >= 4) {
        attributes.handled_access_net = CM_NET_BIND_TCP | CM_NET_CONNECT_TCP;
        size = offsetof(struct cm_ruleset_attr, scoped);
    }
    if (abi >= 5) attributes.handled_access_fs |= CM_FS_IOCTL_DEV;
    if (abi >= 6) {
        attributes.scoped = CM_SCOPE_ABSTRACT_UNIX_SOCKET | CM_SCOPE_SIGNAL;
        size = sizeof attributes;
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attributes, size, 0);
    if (ruleset < 0) return *failed = "landlock_create_ruleset", -errno;
    int result = 0;
    for (char *const *path = readable; path && *path && result == 0; path++) {
        int fd = open(*path, O_PATH | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT || errno == ENOTDIR) continue;
            result = -errno;
            *failed = *path;
            break;
        }
        result = allow_reading(ruleset, fd);
        if (result != 0) *failed = *path;
        close(fd);
    }
    if (result == 0 && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
        result = -errno;
        *failed = "landlock_restrict_self";
    }
    close(ruleset);
    return result == 0 ? abi : result;
}

/* The SIGSYS handler's report: set once, before the filter goes in, and read only by the
   handler (a signal handler has nowhere else to find it). */
static int violation_fd = -1;
static uint32_t violation_kind;

static void on_forbidden_call(int signal, siginfo_t *info, void *context) {
    (void)signal;
    (void)context;
    cm_sandbox_violation message = {.kind = violation_kind, .syscall = info->si_syscall, .arch = info->si_arch};
    (void)!send(violation_fd, &message, sizeof message, MSG_NOSIGNAL | MSG_DONTWAIT);
    syscall(SYS_exit_group, 128 + SIGSYS);
}

/* What a plugin host does from the moment it maps its plugin: reading and mapping the file and
   the libraries it needs (Landlock says which), its channel, memory, threads, clocks, signals
   to itself, and looking at files Landlock already limits. */
static const char *const allowed_calls[] = {
    "read", "write", "readv", "writev", "pread64", "pwrite64", "close", "lseek", "dup", "dup2", "dup3",
    "fstat", "newfstatat", "statx", "stat", "lstat", "access", "faccessat", "faccessat2", "readlink", "readlinkat",
    "getcwd", "getdents64", "open", "openat", "recvmsg", "recvfrom", "sendmsg", "sendto", "poll", "ppoll",
    "mmap", "munmap", "mprotect", "mremap", "madvise", "brk", "mlock", "munlock",
    "futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "set_tid_address", "arch_prctl", "membarrier",
    "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
    "exit", "exit_group", "restart_syscall", "rt_sigreturn", "rt_sigprocmask", "sigaltstack", "rt_sigtimedwait",
    "sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler", "getcpu", "getrandom", "getrusage",
    "uname", "sysinfo", "getrlimit",
    NULL,
};

static int add(scmp_filter_ctx filter, uint32_t action, const char *name, unsigned count, const struct scmp_arg_cmp *conditions) {
    int number = seccomp_syscall_resolve_name(name);
    if (number == __NR_SCMP_ERROR) return 0; /* not a call on this architecture */
    return seccomp_rule_add_array(filter, action, number, count, conditions);
}

int cm_sandbox_seccomp(int report_fd, uint32_t report_kind, const char **failed) {
    violation_fd = report_fd;
    violation_kind = report_kind;
    struct sigaction action = {0};
    action.sa_sigaction = on_forbidden_call;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGSYS, &action, NULL) != 0) return *failed = "sigaction(SIGSYS)", -errno;

    scmp_filter_ctx filter = seccomp_init(SCMP_ACT_TRAP);
    if (!filter) return *failed = "seccomp_init", -ENOMEM;
    int result = seccomp_attr_set(filter, SCMP_FLTATR_CTL_TSYNC, 1);
    if (result != 0) *failed = "seccomp_attr_set(TSYNC)";
    for (const char *const *name = allowed_calls; *name && result == 0; name++) {
        result = add(filter, SCMP_ACT_ALLOW, *name, 0, NULL);
        if (result != 0) *failed = *name;
    }
    pid_t self = getpid();
    struct {
        uint32_t action;
        const char *name;
        struct scmp_arg_cmp condition;
    } conditional[] = {
        /* Threads, not processes; clone3 is answered "not here", so libc falls back to clone. */
        {SCMP_ACT_ALLOW, "clone", SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD)},
        {SCMP_ACT_ERRNO(ENOSYS), "clone3", SCMP_A0(SCMP_CMP_GE, 0)},
        /* Signals to itself only (abort() raises SIGABRT); SIGSYS's handler stays this one. */
        {SCMP_ACT_ALLOW, "tgkill", SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)self)},
        {SCMP_ACT_ALLOW, "kill", SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)self)},
        {SCMP_ACT_ALLOW, "rt_sigaction", SCMP_A0(SCMP_CMP_NE, SIGSYS)},
        /* stdio asks whether its output is a terminal; it is a pipe. (Not FIOASYNC or FIOSETOWN:
           they would have the kernel signal the daemon.) */
        {SCMP_ACT_ALLOW, "ioctl", SCMP_A1(SCMP_CMP_EQ, TCGETS)},
        /* Descriptor flags and copies; status flags without O_ASYNC. Not F_SETOWN(_EX) or
           F_SETSIG (a signal to any process on the next byte of its channel), F_SETLEASE or
           F_NOTIFY (signals too), nor locks or seals: a plugin has no file to lock. */
        {SCMP_ACT_ALLOW, "fcntl", SCMP_A1(SCMP_CMP_EQ, F_DUPFD)},
        {SCMP_ACT_ALLOW, "fcntl", SCMP_A1(SCMP_CMP_EQ, F_DUPFD_CLOEXEC)},
        {SCMP_ACT_ALLOW, "fcntl", SCMP_A1(SCMP_CMP_EQ, F_GETFD)},
        {SCMP_ACT_ALLOW, "fcntl", SCMP_A1(SCMP_CMP_EQ, F_SETFD)},
        {SCMP_ACT_ALLOW, "fcntl", SCMP_A1(SCMP_CMP_EQ, F_GETFL)},
        /* Naming threads; reading limits, not raising them. */
        {SCMP_ACT_ALLOW, "prctl", SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME)},
        {SCMP_ACT_ALLOW, "prctl", SCMP_A0(SCMP_CMP_EQ, PR_GET_NAME)},
        {SCMP_ACT_ALLOW, "prlimit64", SCMP_A2(SCMP_CMP_EQ, 0)},
    };
    for (size_t i = 0; i < sizeof conditional / sizeof conditional[0] && result == 0; i++) {
        result = add(filter, conditional[i].action, conditional[i].name, 1, &conditional[i].condition);
        if (result != 0) *failed = conditional[i].name;
    }
    /* F_SETFL, as long as it does not ask for O_ASYNC (SIGIO to the channel's owner). */
    const struct scmp_arg_cmp set_flags[] = {SCMP_A1(SCMP_CMP_EQ, F_SETFL), SCMP_A2(SCMP_CMP_MASKED_EQ, O_ASYNC, 0)};
    if (result == 0) {
        result = add(filter, SCMP_ACT_ALLOW, "fcntl", 2, set_flags);
        if (result != 0) *failed = "fcntl(F_SETFL)";
    }
    if (result == 0) {
        result = seccomp_load(filter);
        if (result != 0) *failed = "seccomp_load";
    }
    seccomp_release(filter);
    return result;
}

void cm_sandbox_syscall_name(int number, char *name, size_t size) {
    char *known = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, number);
    if (known) {
        snprintf(name, size, "%s", known);
        free(known);
    } else {
        snprintf(name, size, "syscall %d", number);
    }
}
