#ifndef COINMECH_BREADCRUMB_H
#define COINMECH_BREADCRUMB_H
/* The plugin breadcrumb: a small file in the state directory, mapped shared, that says which
   link (generation, index, phase) the daemon is calling into. The deciding thread stores one
   word per link call (a store, not a syscall); other threads (create, describe, destroy) keep
   theirs in thread-local storage. A fatal signal handler copies the crashing thread's word into
   the file, so the next start knows which link crashed the daemon, and quarantines it. */
#include <stdint.h>
#include <sys/timerfd.h>
#include <time.h>

#define CM_CRUMB_MAGIC 0x32424d43u /* "CMB2" */
#define CM_CRUMB_TABLES 4
#define CM_CRUMB_LINKS 64

/* What a word's index names, for each chain generation the table ring still holds. */
typedef struct cm_crumb_link {
    char name[64];
    char plugin[64];
    char sha256[72];
    char config_sha256[72];
    uint64_t budget_ns;
} cm_crumb_link;

typedef struct cm_crumb_table {
    uint64_t generation;
    uint32_t count;
    uint32_t reserved;
    cm_crumb_link links[CM_CRUMB_LINKS];
} cm_crumb_table;

/* The deciding thread's slot. `word` is 0 outside plugin code. */
typedef struct cm_crumb_slot {
    uint64_t word;
    uint32_t reserved[2];
} cm_crumb_slot;

typedef struct cm_crumb_file {
    uint32_t magic;
    int32_t outside_signal;     /* a fatal signal outside plugin code (no link to blame), else 0 */
    int32_t crash_signal;       /* a fatal signal inside plugin code, else 0 */
    int32_t crash_pid;
    uint64_t crash_word;        /* the crashing thread's word */
    uint64_t crash_realtime_ns; /* when */
    cm_crumb_slot deciding;
    cm_crumb_table tables[CM_CRUMB_TABLES];
} cm_crumb_file;

/* Maps `path` (created 0600 if missing), copies what the last run left into *previous (zeroed if
   the file was new or not a breadcrumb), then clears it for this run. NULL with errno on error. */
cm_crumb_file *cm_crumb_map(const char *path, cm_crumb_file *previous);

/* Makes `file` the one the fatal-signal handler writes to, and installs the handler for SIGSEGV,
   SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP and SIGSYS (chaining to what was installed before).
   Once per process. */
void cm_crumb_install(cm_crumb_file *file);

/* The calling thread decides readings: its word is the file's deciding slot (with an alternate
   signal stack, so a plugin that overflows its stack is still recorded). */
void cm_crumb_bind_deciding_thread(void);

/* Any other thread entering (word != 0) or leaving plugin code. */
void cm_crumb_enter(uint64_t word);
void cm_crumb_leave(void);

/* The deciding thread's word: a relaxed atomic store (a plain store on every architecture this
   runs on), read by the hang watch on another thread and by the signal handler on this one. */
static inline void cm_crumb_store(cm_crumb_slot *slot, uint64_t word) { __atomic_store_n(&slot->word, word, __ATOMIC_RELAXED); }
static inline uint64_t cm_crumb_load(const cm_crumb_slot *slot) { return __atomic_load_n(&slot->word, __ATOMIC_RELAXED); }

/* The hang timer: a timerfd (CLOCK_MONOTONIC, non-blocking) the deciding thread arms with a
   link's budget before each in-process call, and disarms when the walk ends. Arming or
   disarming resets its expiration count, so an expiration read while the slot shows the same
   word before and after the read belongs to that call: it has run past its budget. The hang
   watch sleeps on it and, while calls keep within their budgets, never wakes. -1 on error. */
int cm_hang_timer_create(void);
/* Arms `fd` to expire once, `nanoseconds` from now. */
static inline void cm_hang_timer_arm(int fd, uint64_t nanoseconds) {
    struct itimerspec when = {.it_interval = {0, 0},
                              .it_value = {.tv_sec = (time_t)(nanoseconds / 1000000000u), .tv_nsec = (long)(nanoseconds % 1000000000u)}};
    timerfd_settime(fd, 0, &when, NULL);
}
static inline void cm_hang_timer_disarm(int fd) {
    struct itimerspec never = {{0, 0}, {0, 0}};
    timerfd_settime(fd, 0, &never, NULL);
}
/* Expirations since the timer was last armed or disarmed; 0 if none (the read does not block). */
uint64_t cm_hang_timer_expirations(int fd);

#endif
