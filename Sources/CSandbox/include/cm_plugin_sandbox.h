#ifndef COINMECH_PLUGIN_SANDBOX_H
#define COINMECH_PLUGIN_SANDBOX_H
/* The layers a plugin host puts between an untrusted plugin and the machine, each what the
   kernel gives an unprivileged process: a network namespace, resource limits, Landlock and a
   seccomp allow-list (through libseccomp). All of them go in before the plugin's file is mapped:
   its constructors, its entry and its create run inside them. Each call says whether its layer
   is in force. */
#include <stddef.h>
#include <stdint.h>

/* unshare(CLONE_NEWUSER | CLONE_NEWNET): only a loopback that is down. Must be called while the
   process has one thread. 0, or the errno (EPERM where user namespaces are not allowed). */
int cm_sandbox_network_namespace(void);

typedef struct cm_sandbox_limits {
    uint64_t address_space; /* RLIMIT_AS, bytes (0: left as it is) */
    uint64_t open_files;    /* RLIMIT_NOFILE (0: left) */
    uint64_t processes;     /* RLIMIT_NPROC: threads count too, for the whole user (0: left) */
    uint64_t cpu_seconds;   /* RLIMIT_CPU, soft and hard alike: SIGKILL at that much CPU (0: left) */
} cm_sandbox_limits;

/* RLIMIT_CORE 0 (no core file with a plugin's secrets), then the limits given. 0, or the errno
   with the limit's name in *failed. */
int cm_sandbox_limit(const cm_sandbox_limits *limits, const char **failed);

/* The Landlock ABI version the kernel offers: > 0, or -errno (-ENOSYS: not built in,
   -EOPNOTSUPP: built in but not enabled at boot). */
int cm_sandbox_landlock_abi(void);

/* Landlock for this thread and those it starts later: reading (and mapping executable) only
   beneath the paths in `readable` (NULL-terminated; missing ones are skipped); nothing written,
   made or removed anywhere; from ABI 4 no TCP bind or connect; from ABI 6 no signal to, and no
   abstract socket of, a process outside the sandbox. Files on the kernel's internal
   filesystems (a sealed memfd, a pipe) are not Landlock's: a descriptor already open stays
   usable, through /proc/self/fd too. Returns the ABI used (> 0), or -errno with the step in
   *failed. */
int cm_sandbox_landlock(char *const *readable, const char **failed);

/* The seccomp allow-list, on every thread (TSYNC): what loading a shared object and then
   computing need, and nothing a plugin could leave its process with (no fork or clone of a
   process, no exec, no socket, no signal to another process, no fcntl that makes the kernel
   signal someone: F_SETOWN, F_SETSIG, O_ASYNC). A call outside it is not made: the calling
   thread gets SIGSYS, whose handler sends one message on `report_fd` (struct
   cm_sandbox_violation) and ends the process with status 128 + SIGSYS. The handler stays: a
   plugin cannot install another for SIGSYS. 0, or -errno with the step in *failed. */
int cm_sandbox_seccomp(int report_fd, uint32_t report_kind, const char **failed);

/* The message a violation sends: the plugin host's wire header (kind, 0, id 0) and the call. */
typedef struct cm_sandbox_violation {
    uint32_t kind;
    uint32_t reserved;
    uint64_t id;
    int32_t syscall;
    uint32_t arch;
} cm_sandbox_violation;

/* The name of system call `number` on this machine's architecture ("syscall N" if unknown). */
void cm_sandbox_syscall_name(int number, char *name, size_t size);

#endif
