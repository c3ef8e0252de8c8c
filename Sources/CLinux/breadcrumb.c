#define _GNU_SOURCE
#include "cm_breadcrumb.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A signal handler can reach only globals and thread-locals: the mapped file, the actions it
   chains to, and each thread's word. Written once at install (before any plugin runs), read by
   the handler. */
static cm_crumb_file *crumb_file;
static struct sigaction previous_actions[NSIG];
static _Thread_local uint64_t thread_word;
static _Thread_local int deciding_thread;

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};

cm_crumb_file *cm_crumb_map(const char *path, cm_crumb_file *previous) {
    memset(previous, 0, sizeof *previous);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return NULL;
    struct stat info;
    if (fstat(fd, &info) != 0 || ftruncate(fd, sizeof(cm_crumb_file)) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return NULL;
    }
    void *mapped = mmap(NULL, sizeof(cm_crumb_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int saved = errno;
    close(fd);
    if (mapped == MAP_FAILED) {
        errno = saved;
        return NULL;
    }
    cm_crumb_file *file = mapped;
    if ((size_t)info.st_size >= sizeof(cm_crumb_file) && file->magic == CM_CRUMB_MAGIC) memcpy(previous, file, sizeof *previous);
    memset(file, 0, sizeof *file);
    file->magic = CM_CRUMB_MAGIC;
    return file;
}

static void record_crash(int signal, siginfo_t *info, void *context) {
    (void)context;
    uint64_t word = deciding_thread && crumb_file ? __atomic_load_n(&crumb_file->deciding.word, __ATOMIC_RELAXED) : thread_word;
    if (crumb_file && word != 0 && crumb_file->crash_signal == 0) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        crumb_file->crash_word = word;
        crumb_file->crash_realtime_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
        crumb_file->crash_pid = getpid();
        __atomic_store_n(&crumb_file->crash_signal, signal, __ATOMIC_RELEASE);
    } else if (crumb_file && word == 0 && crumb_file->crash_signal == 0 && crumb_file->outside_signal == 0) {
        /* No link's code was running here: a plugin that corrupted the heap earlier is one way. */
        __atomic_store_n(&crumb_file->outside_signal, signal, __ATOMIC_RELEASE);
    }
    /* Then what would have happened without this handler. */
    sigaction(signal, &previous_actions[signal], NULL);
    /* A fault: returning re-runs the faulting instruction, which then meets the previous action.
       A signal that was sent (kill, raise, abort(), the systemd watchdog) is sent again: it
       arrives as this handler returns. */
    if (info->si_code <= 0) raise(signal);
}

void cm_crumb_install(cm_crumb_file *file) {
    crumb_file = file;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = record_crash;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        sigaction(fatal_signals[i], &action, &previous_actions[fatal_signals[i]]);
    }
}

void cm_crumb_bind_deciding_thread(void) {
    deciding_thread = 1;
    /* A plugin that overflows the stack faults with no stack left for the handler. The
       allocation lives as long as the thread; the deciding thread lives as long as the daemon. */
    stack_t alternate;
    alternate.ss_size = 64 * 1024;
    alternate.ss_sp = malloc(alternate.ss_size);
    alternate.ss_flags = 0;
    if (alternate.ss_sp) sigaltstack(&alternate, NULL);
}

void cm_crumb_enter(uint64_t word) { thread_word = word; }

void cm_crumb_leave(void) { thread_word = 0; }

int cm_hang_timer_create(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC); }

uint64_t cm_hang_timer_expirations(int fd) {
    uint64_t count = 0;
    if (read(fd, &count, sizeof count) != (ssize_t)sizeof count) return 0;
    return count;
}
