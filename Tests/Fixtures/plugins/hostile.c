/* A hostile third-party plugin, built only against the public header. It tries the escapes it
   is told to, in every place a plugin's code runs, and logs what became of each:
     - its constructor and its entry point: the tries compiled in, HOSTILE_EARLY, e.g.
       -DHOSTILE_EARLY='"constructor:fork,entry:tcp"' (no configuration exists yet);
     - create: the configuration's "create_tries";
     - its first reading (validate): the configuration's "tries".
   Configuration: {"tries": "ledger_write,memory", "create_tries": "exec", "ledger": PATH,
   "config": PATH, "socket": PATH, "port": N, "alloc_mb": N, "data": PATH}. The tries:
     ledger_write   open the daemon's ledger for writing     ledger_read   and for reading
     config         open the daemon's configuration          tmp           create a file in /tmp
     memory         allocate and touch alloc_mb MiB          data          read the file "data" names
     control_socket connect to the daemon's socket (AF_UNIX)  tcp / tcp6    connect to loopback:port
     udp            send a datagram to 127.0.0.1:port         netlink       open a route netlink socket
     packet         open a raw packet socket                  socketpair    make a pair of sockets
     exec           execve /bin/sh                            fork / vfork  start a process
     clone          clone(2) without CLONE_THREAD             ptrace        attach to the daemon
     kill           SIGKILL the daemon                        tgkill        the same through tgkill(2)
     sigqueue       queue SIGTERM to the daemon               pidfd_signal  signal it through a pidfd
     setown         F_SETOWN its channel to the daemon (SIGIO to the daemon on the next reading)
     async          F_SETFL O_ASYNC on its channel            setsig        F_SETSIG on its channel
     fioasync       ioctl FIOASYNC on its channel             spin          start 4 threads that spin forever
   Each outcome is a line "hostile: TRY refused: WHY" or "hostile: TRY SUCCEEDED" (through the
   host's log service in create and validate, on standard error before); a try the sandbox ends
   never logs its outcome ("hostile: trying TRY" is its last line). That first reading is
   rejected ("escape_refused") if any try was refused, passed otherwise; later ones are passed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "coinmech_plugin.h"

#ifndef HOSTILE_EARLY
#define HOSTILE_EARLY ""
#endif

/* The plugin's channel to the daemon, in a plugin host. */
#define CHANNEL 3

typedef struct instance {
    char tries[256];
    char create_tries[256];
    char ledger[512];
    char config[512];
    char socket_path[108];
    char data[512];
    long port;
    long alloc_mb;
    int done;
    int refused;
    const coinmech_host *host;
} instance;

static void attempt_all(instance *self, const char *list, const char *phase);

/* The value after "key" and its colon, whatever the spacing. */
static const char *after(const char *config, const char *key) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *found = strstr(config, quoted);
    if (!found) return NULL;
    found += strlen(quoted);
    while (*found == ' ' || *found == ':') found++;
    return found;
}

static void text(const char *config, const char *key, char *out, size_t size) {
    const char *found = after(config, key);
    out[0] = 0;
    if (!found || *found != '"') return;
    size_t length = 0;
    for (found++; *found && *found != '"' && length + 1 < size; found++) {
        if (*found == '\\') found++; /* JSON escapes: "\/" */
        if (!*found) break;
        out[length++] = *found;
    }
    out[length] = 0;
}

static long number(const char *config, const char *key, long fallback) {
    const char *found = after(config, key);
    return found ? strtol(found, NULL, 10) : fallback;
}

static void *create(const coinmech_host *host, const char *config, char *error, size_t size) {
    (void)error;
    (void)size;
    instance *self = calloc(1, sizeof *self);
    if (!self) return NULL;
    text(config, "tries", self->tries, sizeof self->tries);
    text(config, "create_tries", self->create_tries, sizeof self->create_tries);
    text(config, "ledger", self->ledger, sizeof self->ledger);
    text(config, "config", self->config, sizeof self->config);
    text(config, "socket", self->socket_path, sizeof self->socket_path);
    text(config, "data", self->data, sizeof self->data);
    self->port = number(config, "port", 9);
    self->alloc_mb = number(config, "alloc_mb", 1024);
    self->host = host;
    if (self->create_tries[0]) {
        attempt_all(self, self->create_tries, NULL);
        coinmech_log(host, COINMECH_LOG_WARNING, "hostile: create done");
    }
    return self;
}

/* A line through the host's log service, or on standard error before there is one. */
static void line_out(instance *self, const char *line) {
    if (self && self->host) coinmech_log(self->host, COINMECH_LOG_WARNING, line);
    else dprintf(2, "%s\n", line);
}

static int early_refused;

static void say(instance *self, const char *try, int ok, int error) {
    char line[256];
    if (ok) snprintf(line, sizeof line, "hostile: %s SUCCEEDED", try);
    else snprintf(line, sizeof line, "hostile: %s refused: %s", try, strerror(error));
    if (!ok) {
        if (self) self->refused++;
        else early_refused++;
    }
    line_out(self, line);
}

static void *spin(void *unused) {
    (void)unused;
    for (volatile unsigned long n = 0;; n++) {}
    return NULL;
}

/* A socket of `family` and `type`, and for the inet ones a connect or a datagram to loopback. */
static void socket_try(instance *self, const char *try, int family, int type, int protocol) {
    long port = self ? self->port : 9;
    int fd = socket(family, type, protocol);
    int ok = fd >= 0;
    if (ok && family == AF_INET) {
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ok = type == SOCK_DGRAM ? sendto(fd, "x", 1, 0, (struct sockaddr *)&address, sizeof address) == 1
                                : connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
    } else if (ok && family == AF_INET6) {
        struct sockaddr_in6 address = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
        ok = connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
    }
    say(self, try, ok, errno);
    if (fd >= 0) close(fd);
}

static void opening(instance *self, const char *try, const char *path, int flags) {
    int fd = open(path, flags, 0600);
    say(self, try, fd >= 0, errno);
    if (fd >= 0) close(fd);
}

/* One try. `self` is NULL in the constructor and the entry: no configuration, no host yet. */
static void attempt(instance *self, const char *try) {
    char line[128];
    snprintf(line, sizeof line, "hostile: trying %s", try);
    line_out(self, line);
    if (!self && (strstr(try, "ledger") || !strcmp(try, "config") || !strcmp(try, "data") || !strcmp(try, "control_socket"))) {
        line_out(self, "hostile: no configuration before create: only paths of its own can be tried");
    } else if (strcmp(try, "ledger_write") == 0) opening(self, try, self->ledger, O_RDWR);
    else if (strcmp(try, "ledger_read") == 0) opening(self, try, self->ledger, O_RDONLY);
    else if (strcmp(try, "config") == 0) opening(self, try, self->config, O_RDONLY);
    else if (strcmp(try, "data") == 0) opening(self, try, self->data, O_RDONLY);
    else if (strcmp(try, "tmp") == 0) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/coinmech-hostile-%d", (int)getpid());
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
        say(self, try, fd >= 0, errno);
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
    } else if (strcmp(try, "memory") == 0) {
        size_t bytes = (size_t)(self ? self->alloc_mb : 1024) << 20;
        char *block = malloc(bytes);
        say(self, try, block != NULL, ENOMEM);
        if (block) {
            memset(block, 1, bytes);
            free(block);
        }
    } else if (strcmp(try, "control_socket") == 0) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        snprintf(address.sun_path, sizeof address.sun_path, "%s", self->socket_path);
        int ok = fd >= 0 && connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
        say(self, try, ok, errno);
        if (fd >= 0) close(fd);
    } else if (strcmp(try, "tcp") == 0) {
        socket_try(self, try, AF_INET, SOCK_STREAM, 0);
    } else if (strcmp(try, "tcp6") == 0) {
        socket_try(self, try, AF_INET6, SOCK_STREAM, 0);
    } else if (strcmp(try, "udp") == 0) {
        socket_try(self, try, AF_INET, SOCK_DGRAM, 0);
    } else if (strcmp(try, "netlink") == 0) {
        socket_try(self, try, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
    } else if (strcmp(try, "packet") == 0) {
        socket_try(self, try, AF_PACKET, SOCK_RAW, 0);
    } else if (strcmp(try, "socketpair") == 0) {
        int pair[2];
        int ok = socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0;
        say(self, try, ok, errno);
        if (ok) {
            close(pair[0]);
            close(pair[1]);
        }
    } else if (strcmp(try, "exec") == 0) {
        char *const argv[] = {"sh", "-c", "true", NULL};
        execve("/bin/sh", argv, NULL);
        say(self, try, 0, errno);
    } else if (strcmp(try, "fork") == 0 || strcmp(try, "vfork") == 0 || strcmp(try, "clone") == 0) {
        /* A child that outlives its host: before the sandbox held from the first instruction, one
           forked in create never had the filter. */
        pid_t child = strcmp(try, "fork") == 0    ? fork()
                      : strcmp(try, "vfork") == 0 ? vfork()
                                                  : (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
        if (child == 0) _exit(0);
        if (child > 0) waitpid(child, NULL, 0);
        say(self, try, child > 0, errno);
    } else if (strcmp(try, "ptrace") == 0) {
        long ok = ptrace(PTRACE_ATTACH, getppid(), NULL, NULL);
        say(self, try, ok == 0, errno);
        if (ok == 0) ptrace(PTRACE_DETACH, getppid(), NULL, NULL);
    } else if (strcmp(try, "kill") == 0) {
        int ok = kill(getppid(), SIGKILL) == 0;
        say(self, try, ok, errno);
    } else if (strcmp(try, "tgkill") == 0) {
        int ok = syscall(SYS_tgkill, getppid(), getppid(), SIGKILL) == 0;
        say(self, try, ok, errno);
    } else if (strcmp(try, "sigqueue") == 0) {
        union sigval value = {.sival_int = 0};
        int ok = sigqueue(getppid(), SIGTERM, value) == 0;
        say(self, try, ok, errno);
    } else if (strcmp(try, "pidfd_signal") == 0) {
        int fd = (int)syscall(SYS_pidfd_open, getppid(), 0);
        int ok = fd >= 0 && syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) == 0;
        say(self, try, ok, errno);
        if (fd >= 0) close(fd);
    } else if (strcmp(try, "setown") == 0) {
        /* The kernel would send SIGIO to the daemon when the next reading reaches the channel. */
        int ok = fcntl(CHANNEL, F_SETOWN, getppid()) == 0;
        say(self, try, ok, errno);
    } else if (strcmp(try, "async") == 0) {
        int flags = fcntl(CHANNEL, F_GETFL);
        int ok = flags >= 0 && fcntl(CHANNEL, F_SETFL, flags | O_ASYNC) == 0;
        say(self, try, ok, errno);
    } else if (strcmp(try, "setsig") == 0) {
        int ok = fcntl(CHANNEL, F_SETSIG, SIGKILL) == 0;
        say(self, try, ok, errno);
    } else if (strcmp(try, "fioasync") == 0) {
        int on = 1;
        int ok = ioctl(CHANNEL, FIOASYNC, &on) == 0;
        say(self, try, ok, errno);
    } else if (strcmp(try, "spin") == 0) {
        int started = 0;
        for (int i = 0; i < 4; i++) {
            pthread_t thread;
            if (pthread_create(&thread, NULL, spin, NULL) == 0) started++;
        }
        say(self, try, started == 4, errno);
    }
}

/* Every try of `list` (comma-separated), or those of it for `phase` ("phase:try,…"). */
static void attempt_all(instance *self, const char *list, const char *phase) {
    char tries[256];
    snprintf(tries, sizeof tries, "%s", list);
    for (char *save = NULL, *try = strtok_r(tries, ",", &save); try; try = strtok_r(NULL, ",", &save)) {
        if (phase) {
            char *colon = strchr(try, ':');
            if (!colon || (size_t)(colon - try) != strlen(phase) || strncmp(try, phase, strlen(phase)) != 0) continue;
            try = colon + 1;
        }
        attempt(self, try);
    }
}

/* Runs when the host maps the file, before the host calls anything of it. */
__attribute__((constructor)) static void hostile_constructor(void) {
    if (HOSTILE_EARLY[0]) {
        attempt_all(NULL, HOSTILE_EARLY, "constructor");
        line_out(NULL, "hostile: constructor done");
    }
}

static void validate(void *ctx, const coinmech_reading *reading, coinmech_decision *decision) {
    (void)reading;
    instance *self = ctx;
    if (self->done++) return;
    attempt_all(self, self->tries, NULL);
    coinmech_log(self->host, COINMECH_LOG_WARNING, "hostile: done");
    if (self->refused) coinmech_decision_reject(decision, "escape_refused", "the sandbox refused an escape");
}

static void destroy(void *ctx) { free(ctx); }

static const coinmech_plugin hostile = {
    .abi_version = COINMECH_PLUGIN_ABI_VERSION,
    .size = sizeof(coinmech_plugin),
    .name = "hostile",
    .version = "0.1",
    .license = "MIT-0",
    .description = "a test fixture that tries to escape its plugin host",
    .reading_kinds = COINMECH_KINDS_MEASURED,
    .create = create,
    .validate = validate,
    .destroy = destroy,
};

__attribute__((visibility("default")))
int coinmech_plugin_entry(uint32_t host_abi_version, coinmech_plugin *plugin) {
    static int entered;
    if (HOSTILE_EARLY[0] && !entered++) {
        attempt_all(NULL, HOSTILE_EARLY, "entry");
        line_out(NULL, "hostile: entry done");
    }
    return coinmech_plugin_offer(host_abi_version, plugin, &hostile);
}
