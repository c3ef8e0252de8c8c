/* A plugin that misbehaves on purpose, one way per instance: {"mode": M} with M one of
     bad_verdict    returns verdict 7           empty_accept   accepts without currency
     pass           passes every reading        hang           sleeps 30 s on every call
     echo_source    rejects with the reading's source name as its message
     slow           takes 80 ms and passes      sleep          sleeps {"ms": N} and passes
     liar           accepts 10^15 with a code that is not text
     fake_currency  accepts 25 of "ZZZ"         odd_value      accepts 37 cents of USD
     dime_dollar    accepts USD "dime" at 100   euro_two       accepts EUR "EUR_2" at 200
     segv           dereferences NULL on call {"at": N} (default 1), passes before
     abort          abort()s on call N          exit           _exit(0)s on call N
     scribble       writes garbage to descriptor 3 (a plugin host's channel), then passes
     crash_create   dereferences NULL in create()
     abort_later    create starts a thread that abort()s {"ms": N} ms later, outside any call
                    (as heap corruption found later by free() does)
     log            logs "call N" through the host on every call, then passes
     leak           create allocates 1 KiB that destroy never frees
     hang_destroy   destroy() never returns (it sleeps for good)
     random         answers accept or pass at random (rand()): the same reading, another verdict
     picky          answers verdict 9 to a reading whose diameter is between 13 and 14 mm
     spin           uses {"ms": N} ms of its thread's CPU time, then passes, and logs
                    "spin: N ms of CPU in W µs" (W: the wall clock the call took)
     threads        takes {"ms": N} ms (default 2) per call, for the threading contract's test:
                    counts creates made while an instance was inside validate, and records
                    the thread of every destroy
   destroy() calls are counted so tests can see instances freed when the last chain holding
   them goes away. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "coinmech_plugin.h"

static int destroyed;
__attribute__((visibility("default"))) int fixture_destroyed_count(void) { return destroyed; }

/* The threading contract's observations (mode "threads"). */
static _Atomic int inside_validate;
static _Atomic int created_while_validating;
static _Atomic int destroys;
static _Atomic unsigned long destroy_threads[256];
__attribute__((visibility("default"))) int fixture_created_while_validating(void) { return created_while_validating; }
__attribute__((visibility("default"))) int fixture_destroy_threads(unsigned long *out, int max) {
    int count = destroys < max ? destroys : max;
    for (int i = 0; i < count; i++) out[i] = destroy_threads[i];
    return count;
}

typedef struct instance {
    char mode[32];
    long at;
    long ms;
    long calls;
    const coinmech_host *host;
} instance;

static long number(const char *config, const char *key, long fallback) {
    const char *found = strstr(config, key);
    long value;
    if (found && sscanf(found + strlen(key), "\" : %ld", &value) == 1) return value;
    return fallback;
}

static void *abort_after(void *ms) {
    usleep((useconds_t)(long)ms * 1000);
    abort();
}

static void *create(const coinmech_host *host, const char *config, char *error, size_t size) {
    static const char *const modes[] = {"bad_verdict", "empty_accept", "pass", "hang", "echo_source", "slow", "sleep", "liar",
                                        "fake_currency", "odd_value", "dime_dollar", "euro_two", "segv", "abort", "exit", "scribble", "crash_create", "log", "threads", "leak", "random", "picky", "abort_later", "hang_destroy", "spin", NULL};
    instance *self = calloc(1, sizeof *self);
    const char *mode = strstr(config, "\"mode\"");
    if (!self || !mode || sscanf(mode, "\"mode\" : \"%31[a-z_]\"", self->mode) != 1) {
        free(self);
        coinmech_copy_field(error, size, "mode must be one of the modes misbehaving.c lists");
        return NULL;
    }
    int known = 0;
    for (int i = 0; modes[i]; i++) known |= strcmp(modes[i], self->mode) == 0;
    if (!known) {
        free(self);
        coinmech_copy_field(error, size, "unknown mode");
        return NULL;
    }
    self->at = number(config, "\"at", 1);
    self->ms = number(config, "\"ms", 100);
    self->host = host;
    if (strcmp(self->mode, "crash_create") == 0) *(volatile int *)0 = 1;
    if (strcmp(self->mode, "abort_later") == 0) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, abort_after, (void *)self->ms) == 0) pthread_detach(thread);
    }
    if (strcmp(self->mode, "leak") == 0) {
        volatile char *lost = malloc(1024);
        if (lost) lost[0] = 1;
    }
    if (strcmp(self->mode, "threads") == 0) {
        self->ms = number(config, "\"ms", 2);
        if (inside_validate) created_while_validating++;
    }
    return self;
}

static int is(const instance *self, const char *mode) { return strcmp(self->mode, mode) == 0; }

static long long nanoseconds(clockid_t clock) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* Work that needs `ms` of CPU, however long the scheduler makes it take. */
static void spin(instance *self) {
    long long start = nanoseconds(CLOCK_MONOTONIC), cpu = nanoseconds(CLOCK_THREAD_CPUTIME_ID);
    while (nanoseconds(CLOCK_THREAD_CPUTIME_ID) - cpu < self->ms * 1000000LL) {
    }
    char line[64];
    snprintf(line, sizeof line, "spin: %ld ms of CPU in %lld µs", self->ms, (nanoseconds(CLOCK_MONOTONIC) - start) / 1000);
    coinmech_log(self->host, COINMECH_LOG_WARNING, line);
}

static void validate(void *ctx, const coinmech_reading *r, coinmech_decision *d) {
    instance *self = ctx;
    long call = ++self->calls;
    if (is(self, "bad_verdict")) d->verdict = 7;
    else if (is(self, "empty_accept")) d->verdict = COINMECH_VERDICT_ACCEPT;
    else if (is(self, "hang")) sleep(30);  /* a wedged plugin: the deciding loop stops turning */
    else if (is(self, "echo_source")) coinmech_decision_reject(d, "echo", r->source ? r->source : "(null)");
    else if (is(self, "slow")) usleep(80000);  /* slower than the mech's 50 ms deadline */
    else if (is(self, "sleep")) usleep((useconds_t)self->ms * 1000);
    else if (is(self, "liar")) coinmech_decision_accept(d, "USD", "\xff\xfe\x01quarter", 1000000000000000LL);
    else if (is(self, "fake_currency")) coinmech_decision_accept(d, "ZZZ", "quarter", 25);
    else if (is(self, "odd_value")) coinmech_decision_accept(d, "USD", "quarter", 37);
    else if (is(self, "dime_dollar")) coinmech_decision_accept(d, "USD", "dime", 100);
    else if (is(self, "euro_two")) coinmech_decision_accept(d, "EUR", "EUR_2", 200);
    else if (is(self, "segv") && call == self->at) *(volatile int *)0 = 1;
    else if (is(self, "abort") && call == self->at) abort();
    else if (is(self, "exit") && call == self->at) _exit(0);
    else if (is(self, "scribble")) (void)!write(3, "not a message at all, just bytes", 32);
    else if (is(self, "random")) {
        if (rand() % 2) coinmech_decision_accept(d, "USD", "quarter", 25);
    }
    else if (is(self, "picky") && (r->flags & COINMECH_READING_HAS_DIAMETER) && r->diameter_mm >= 13 && r->diameter_mm < 14) d->verdict = 9;
    else if (is(self, "threads")) {
        inside_validate++;
        usleep((useconds_t)self->ms * 1000);
        inside_validate--;
    }
    else if (is(self, "spin")) spin(self);
    else if (is(self, "log")) {
        char line[32];
        snprintf(line, sizeof line, "call %ld", call);
        coinmech_log(self->host, COINMECH_LOG_WARNING, line);
    }
}

static void destroy(void *ctx) {
    if (is(ctx, "hang_destroy")) for (;;) sleep(3600);
    if (is(ctx, "threads")) {
        int slot = destroys++;
        if (slot < 256) destroy_threads[slot] = (unsigned long)pthread_self();
    }
    free(ctx);
    destroyed++;
}

static const coinmech_plugin misbehaving = {
    .abi_version = COINMECH_PLUGIN_ABI_VERSION,
    .size = sizeof(coinmech_plugin),
    .name = "misbehaving",
    .version = "0.2",
    .license = "MIT-0",
    .description = "a test fixture that misbehaves on purpose",
    .reading_kinds = COINMECH_KINDS_MEASURED,
    .create = create,
    .validate = validate,
    .destroy = destroy,
};

__attribute__((visibility("default")))
int coinmech_plugin_entry(uint32_t host_abi_version, coinmech_plugin *plugin) {
    return coinmech_plugin_offer(host_abi_version, plugin, &misbehaving);
}
