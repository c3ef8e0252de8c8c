/* A hostile third-party plugin, built only against the public header. On its first reading it
   tries each escape its configuration lists, logs what became of it through the host, and
   passes: {"tries": "ledger_write,ledger_read,config,tmp,memory", "ledger": PATH,
   "config": PATH, "socket": PATH, "port": N, "alloc_mb": N}. The tries:
     ledger_write   open the daemon's ledger for writing     ledger_read   and for reading
     config         open the daemon's configuration          tmp           create a file in /tmp
     memory         allocate and touch alloc_mb MiB          control_socket connect to the daemon's socket
     tcp            connect to 127.0.0.1:port                exec          execve /bin/sh
     fork           fork a process                           ptrace        attach to the daemon
     kill           SIGKILL the daemon                        data          read the file "data" names (allowed
                                                                            when the link lists it as readable)
   Each outcome is a log line "hostile: TRY refused: WHY" or "hostile: TRY SUCCEEDED"; a try the
   sandbox ends never logs its outcome ("hostile: trying TRY" is its last line). That first
   reading is rejected ("escape_refused") if any try was refused, passed otherwise; later ones
   are passed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "coinmech_plugin.h"

typedef struct instance {
    char tries[256];
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
    text(config, "ledger", self->ledger, sizeof self->ledger);
    text(config, "config", self->config, sizeof self->config);
    text(config, "socket", self->socket_path, sizeof self->socket_path);
    text(config, "data", self->data, sizeof self->data);
    self->port = number(config, "port", 9);
    self->alloc_mb = number(config, "alloc_mb", 1024);
    self->host = host;
    return self;
}

static void say(instance *self, const char *try, int ok, int error) {
    char line[256];
    if (ok) snprintf(line, sizeof line, "hostile: %s SUCCEEDED", try);
    else snprintf(line, sizeof line, "hostile: %s refused: %s", try, strerror(error));
    if (!ok) self->refused++;
    coinmech_log(self->host, COINMECH_LOG_WARNING, line);
}

static void opening(instance *self, const char *try, const char *path, int flags) {
    int fd = open(path, flags, 0600);
    say(self, try, fd >= 0, errno);
    if (fd >= 0) close(fd);
}

static void attempt(instance *self, const char *try) {
    char line[128];
    snprintf(line, sizeof line, "hostile: trying %s", try);
    coinmech_log(self->host, COINMECH_LOG_WARNING, line);
    if (strcmp(try, "ledger_write") == 0) opening(self, try, self->ledger, O_RDWR);
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
        size_t bytes = (size_t)self->alloc_mb << 20;
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
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)self->port)};
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int ok = fd >= 0 && connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
        say(self, try, ok, errno);
        if (fd >= 0) close(fd);
    } else if (strcmp(try, "exec") == 0) {
        char *const argv[] = {"sh", "-c", "true", NULL};
        execve("/bin/sh", argv, NULL);
        say(self, try, 0, errno);
    } else if (strcmp(try, "fork") == 0) {
        pid_t child = fork();
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
    }
}

static void validate(void *ctx, const coinmech_reading *reading, coinmech_decision *decision) {
    (void)reading;
    instance *self = ctx;
    if (self->done++) return;
    char tries[256];
    snprintf(tries, sizeof tries, "%s", self->tries);
    for (char *save = NULL, *try = strtok_r(tries, ",", &save); try; try = strtok_r(NULL, ",", &save)) attempt(self, try);
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
    return coinmech_plugin_offer(host_abi_version, plugin, &hostile);
}
