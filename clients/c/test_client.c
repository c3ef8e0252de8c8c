/* Tests of libcoinmech-client: against a fake daemon (a forked child speaking scripted lines
 * on a temp Unix socket), fuzzing of the reader, and an integration test against coinsim and
 * coinmechd from $COINMECH_BIN_DIR. Exit status 0 when every check passed.
 *   test_client [--no-integration] [--only NAME]
 * COINMECH_REQUIRE_INTEGRATION=1 makes a missing COINMECH_BIN_DIR a failure, not a skip;
 * COINMECH_FUZZ_SEED=N and COINMECH_FUZZ_RUNS=N repeat or lengthen the fuzzing. */
#define _GNU_SOURCE
#include "cm_json.h"
#include "coinmech_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures, checks;

#define CHECK(cond, ...)                                                                                          \
    do {                                                                                                          \
        checks++;                                                                                                 \
        if (!(cond)) {                                                                                            \
            failures++;                                                                                           \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                       \
            fprintf(stderr, __VA_ARGS__);                                                                         \
            fputc('\n', stderr);                                                                                  \
        }                                                                                                         \
    } while (0)

#define CHECK_STATUS(got, want, conn)                                                                             \
    CHECK((got) == (want), "status %d (%s), wanted %d (%s); last error: %s", (got), coinmech_strerror(got), (want), \
          coinmech_strerror(want), (conn) ? coinmech_last_error(conn) : "-")

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for a child to exit within timeout_ms (polling waitpid: a deadline, not a sleep to
 * synchronise); kills it with SIGKILL past the deadline. Returns its wait status, or -1. */
static int reap(pid_t pid, int timeout_ms) {
    int64_t deadline = now_ms() + timeout_ms;
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        if (r < 0 && errno != EINTR) return -1;
        if (now_ms() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            return -1;
        }
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* ==== the fake daemon ======================================================================= */

enum { S_END, S_SEND, S_EXPECT, S_CLOSE, S_ACCEPT, S_SEND_BIG, S_HOLD, S_SEND_RAW };
typedef struct {
    int op;
    const char *text; /* S_SEND: a line (newline added); S_EXPECT: the exact line; S_SEND_RAW: bytes */
    size_t n;         /* S_SEND_BIG: bytes of 'x' after text; S_SEND_RAW: length */
} step;

typedef struct {
    pid_t pid;
    char dir[64];
    char path[128];
} fake;

#define HELLO "{\"daemon\":\"coinmechd\",\"protocol\":2,\"seq\":41,\"type\":\"hello\",\"version\":\"0.5.0\"}"

static int child_accept(int listener) {
    struct pollfd p = {.fd = listener, .events = POLLIN};
    if (poll(&p, 1, 10000) != 1) return -1;
    return accept(listener, NULL, NULL);
}

static int child_send(int fd, const char *data, size_t n) {
    size_t sent = 0;
    while (sent < n) {
        ssize_t k = send(fd, data + sent, n - sent, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        sent += (size_t)k;
    }
    return 0;
}

/* One line from the client (5 s at most), without its newline, into buf. */
static int child_read_line(int fd, char *buf, size_t cap) {
    size_t n = 0;
    int64_t deadline = now_ms() + 5000;
    while (n + 1 < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int)(deadline - now_ms());
        if (left <= 0 || poll(&p, 1, left) != 1) return -1;
        ssize_t k = recv(fd, buf + n, 1, 0);
        if (k <= 0) return -1;
        if (buf[n] == '\n') {
            buf[n] = '\0';
            return 0;
        }
        n++;
    }
    return -1;
}

static int run_script(int listener, const step *script) {
    int bad = 0;
    int fd = child_accept(listener);
    if (fd < 0) {
        fprintf(stderr, "fake daemon: no client connected\n");
        return 1;
    }
    char line[8192];
    for (const step *s = script; s->op != S_END; s++) {
        switch (s->op) {
        case S_SEND: {
            size_t n = strlen(s->text);
            char *copy = malloc(n + 1);
            memcpy(copy, s->text, n);
            copy[n] = '\n';
            child_send(fd, copy, n + 1);
            free(copy);
            break;
        }
        case S_SEND_RAW:
            child_send(fd, s->text, s->n);
            break;
        case S_SEND_BIG: {
            char *big = malloc(s->n);
            memset(big, 'x', s->n);
            child_send(fd, s->text, strlen(s->text));
            child_send(fd, big, s->n);
            child_send(fd, "\"}}\n", 4);
            free(big);
            break;
        }
        case S_EXPECT:
            if (child_read_line(fd, line, sizeof line) != 0) {
                fprintf(stderr, "fake daemon: wanted %s, got no line\n", s->text);
                bad++;
            } else if (strcmp(line, s->text) != 0) {
                fprintf(stderr, "fake daemon: wanted %s\n              got    %s\n", s->text, line);
                bad++;
            }
            break;
        case S_CLOSE:
            close(fd);
            fd = -1;
            break;
        case S_ACCEPT:
            if (fd >= 0) close(fd);
            fd = child_accept(listener);
            if (fd < 0) {
                fprintf(stderr, "fake daemon: the client did not connect again\n");
                return bad + 1;
            }
            break;
        case S_HOLD: { /* until the client closes (10 s at most) */
            char sink[4096];
            int64_t deadline = now_ms() + 10000;
            for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                int left = (int)(deadline - now_ms());
                if (left <= 0 || poll(&p, 1, left) != 1) break;
                if (recv(fd, sink, sizeof sink, 0) <= 0) break;
            }
            break;
        }
        }
    }
    if (fd >= 0) close(fd);
    return bad;
}

static void fake_start(fake *f, const step *script) {
    snprintf(f->dir, sizeof f->dir, "/tmp/cm-fake-XXXXXX");
    if (!mkdtemp(f->dir)) {
        perror("mkdtemp");
        exit(2);
    }
    snprintf(f->path, sizeof f->path, "%s/fake.sock", f->dir);
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, f->path, strlen(f->path) + 1); /* under 40 bytes */
    if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 8) != 0) {
        perror("fake daemon socket");
        exit(2);
    }
    fflush(NULL);
    f->pid = fork();
    if (f->pid < 0) {
        perror("fork");
        exit(2);
    }
    if (f->pid == 0) {
        int bad = run_script(listener, script);
        _exit(bad > 100 ? 100 : bad);
    }
    close(listener); /* the child's copy answers; none is left once it exits */
}

/* Reaps the fake daemon: its script must have gone as written. */
static void fake_finish(fake *f, const char *test) {
    int status = reap(f->pid, 15000);
    CHECK(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "%s: the fake daemon's expectations failed (wait status %d)", test, status);
    unlink(f->path);
    rmdir(f->dir);
}

/* ==== unit tests against the fake daemon ==================================================== */

static void test_hello(void) {
    static const step script[] = {{S_SEND, HELLO, 0}, {S_HOLD, 0, 0}, {S_END, 0, 0}};
    fake f;
    fake_start(&f, script);
    coinmech_conn *c = NULL;
    char err[256] = "unset";
    int st = coinmech_connect(f.path, &c, err, sizeof err);
    CHECK_STATUS(st, 0, c);
    CHECK(c != NULL, "a connection");
    CHECK(coinmech_hello_seq(c) == 41, "hello seq %lld", (long long)coinmech_hello_seq(c));
    CHECK(strcmp(coinmech_hello_version(c), "0.5.0") == 0, "version %s", coinmech_hello_version(c));
    coinmech_close(c);
    fake_finish(&f, "hello");
}

/* Each of these first lines must fail the connect with want, and a message containing what. */
static void connect_fails(const step *script, int want, const char *what, const coinmech_options *options) {
    fake f;
    fake_start(&f, script);
    coinmech_conn *c = (coinmech_conn *)&f; /* must be reset to NULL */
    char err[512] = "";
    int st = coinmech_connect_ex(f.path, options, &c, err, sizeof err);
    CHECK(st == want, "connect: status %d (%s), wanted %d (%s): %s", st, coinmech_strerror(st), want, coinmech_strerror(want), err);
    CHECK(c == NULL, "no connection on failure");
    CHECK(strstr(err, what) != NULL, "the message \"%s\" says \"%s\"", err, what);
    fake_finish(&f, what);
}

static void test_connect_errors(void) {
    {
        static const step s[] = {{S_SEND, "{\"daemon\":\"coinmechd\",\"protocol\":3,\"seq\":1,\"type\":\"hello\",\"version\":\"9\"}", 0},
                                 {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_VERSION, "protocol 3", NULL);
    }
    {
        static const step s[] = {{S_SEND, "{\"daemon\":\"coinmechd\",\"protocol\":1,\"seq\":1,\"type\":\"hello\"}", 0}, {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_VERSION, "protocol 1", NULL);
    }
    {
        static const step s[] = {{S_SEND, "{\"daemon\":\"coinmechd\",\"protocol\":\"2\",\"seq\":1,\"type\":\"hello\"}", 0}, {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_NO_HELLO, "without a protocol", NULL);
    }
    {
        static const step s[] = {{S_SEND, "{\"protocol\":2,\"type\":\"hello\"}", 0}, {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_NO_HELLO, "without a seq", NULL);
    }
    {
        static const step s[] = {{S_SEND, "{\"id\":1,\"ok\":true,\"result\":{},\"type\":\"reply\"}", 0}, {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_NO_HELLO, "not a hello", NULL);
    }
    {
        static const step s[] = {{S_CLOSE, 0, 0}, {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_NO_HELLO, "closed the connection", NULL);
    }
    {
        static const step s[] = {{S_SEND, "hello there", 0}, {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_NO_HELLO, "not a JSON object", NULL);
    }
    {
        static const step s[] = {{S_SEND, "[2]", 0}, {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_NO_HELLO, "not a JSON object", NULL);
    }
    {
        static const step s[] = {{S_SEND_RAW, "{\"daemon\":\"coinmechd\",\"protocol\":2,", 35}, {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_NO_HELLO, "middle of a line", NULL);
    }
    {
        static const coinmech_options quick = {.hello_timeout_ms = 200};
        static const step s[] = {{S_HOLD, 0, 0}, {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_NO_HELLO, "within 200 ms", &quick);
    }
    {
        static const step s[] = {
            {S_SEND,
             "{\"error\":{\"code\":\"unavailable\",\"message\":\"the daemon serves 64 connections, its limit\"},\"id\":null,"
             "\"ok\":false,\"type\":\"reply\"}",
             0},
            {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_UNAVAILABLE, "its limit", NULL);
    }
    {
        static const step s[] = {{S_SEND_BIG, "{\"type\":\"hello\",\"pad\":\"", COINMECH_MAX_LINE + 10}, {S_END, 0, 0}};
        connect_fails(s, COINMECH_E_LINE_TOO_LONG, "longer than", NULL);
    }
    /* Nothing listening: -ENOENT, and a message. */
    coinmech_conn *c = NULL;
    char err[256] = "";
    int st = coinmech_connect("/tmp/cm-no-such-dir/none.sock", &c, err, sizeof err);
    CHECK(st == -ENOENT && c == NULL && strstr(err, "cannot connect"), "no socket: %d %s", st, err);
    st = coinmech_connect("/tmp/cm-no-such-dir/none.sock", &c, NULL, 0);
    CHECK(st == -ENOENT, "no socket and no error buffer: %d", st);
}

/* A connection to a fake running script; the caller finishes both. */
static coinmech_conn *open_fake(fake *f, const step *script) {
    fake_start(f, script);
    coinmech_conn *c = NULL;
    char err[256] = "";
    int st = coinmech_connect(f->path, &c, err, sizeof err);
    CHECK(st == 0, "connect to the fake daemon: %s", err);
    return c;
}

static void test_bad_replies(void) {
    static const char *bad[] = {
        "this is not json",
        "{\"type\":\"reply\",\"id\":1,\"ok\":true,\"result\":{}",        /* no closing brace */
        "{\"type\":\"reply\",\"id\":1,\"ok\":true,\"result\":{}} trailing", /* garbage after */
        "{\"type\":\"reply\",\"id\":1,\"ok\":true,\"result\":{\"a\":\"\x01\"}}", /* a control character */
        "{\"type\":\"reply\",\"id\":1,\"ok\":true,\"result\":{\"a\":01}}",     /* a leading zero */
        "{\"type\":\"reply\",\"id\":1,\"ok\":true,\"result\":{\"a\":\"\\q\"}}",   /* a bad escape */
        "{\"type\":\"reply\",\"id\":1,\"ok\":\"yes\",\"result\":{}}",             /* ok not a bool */
        "{\"type\":\"reply\",\"id\":7,\"ok\":true,\"result\":{}}",                /* a request never sent */
        "{\"type\":\"reply\",\"ok\":true,\"result\":{}}",                         /* no id */
        "{\"type\":\"reply\",\"id\":1,\"ok\":true}",                              /* no result */
        "{\"type\":\"reply\",\"id\":1,\"ok\":false,\"error\":\"bad\"}",           /* error not an object */
        "{\"type\":\"reply\",\"id\":null,\"ok\":true,\"result\":{}}",             /* ok to nobody */
        "{\"type\":\"event\",\"seq\":3,\"event\":{\"kind\":\"coin\"}}",           /* an event unasked */
        "{\"id\":1,\"ok\":true,\"result\":{}}",                                   /* no type */
        "{\"type\":\"hello\",\"protocol\":2,\"seq\":1}",                          /* a second hello */
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        step script[] = {{S_SEND, HELLO, 0}, {S_EXPECT, "{\"cmd\":\"status\",\"id\":1}", 0}, {S_SEND, bad[i], 0}, {S_HOLD, 0, 0}, {S_END, 0, 0}};
        fake f;
        coinmech_conn *c = open_fake(&f, script);
        char buf[256];
        int st = coinmech_status_json(c, buf, sizeof buf, NULL);
        CHECK(st == COINMECH_E_PROTOCOL, "reply %zu (%.40s): status %d (%s): %s", i, bad[i], st, coinmech_strerror(st), coinmech_last_error(c));
        CHECK(coinmech_last_error(c)[0] != '\0', "reply %zu: a message", i);
        /* The stream is out of step: every later call says so, without touching the socket. */
        int again = coinmech_status_json(c, buf, sizeof buf, NULL);
        CHECK(again == COINMECH_E_PROTOCOL, "reply %zu: the connection stays broken (%d)", i, again);
        coinmech_close(c);
        fake_finish(&f, bad[i]);
    }
    /* A NUL byte in a line. */
    static const char nul_line[] = "{\"type\":\"reply\",\"id\":1,\"ok\":true,\"result\":{\"a\":\"x\0y\"}}\n";
    step script[] = {{S_SEND, HELLO, 0}, {S_EXPECT, "{\"cmd\":\"status\",\"id\":1}", 0},
                     {S_SEND_RAW, nul_line, sizeof nul_line - 1}, {S_HOLD, 0, 0}, {S_END, 0, 0}};
    fake f;
    coinmech_conn *c = open_fake(&f, script);
    char buf[256];
    int st = coinmech_status_json(c, buf, sizeof buf, NULL);
    CHECK_STATUS(st, COINMECH_E_PROTOCOL, c);
    coinmech_close(c);
    fake_finish(&f, "nul");
}

static void test_long_and_cut_lines(void) {
    {   /* Longer than the cap: the connection breaks, the buffer stops growing. */
        static const step s[] = {{S_SEND, HELLO, 0}, {S_EXPECT, "{\"cmd\":\"status\",\"id\":1}", 0},
                                 {S_SEND_BIG, "{\"type\":\"reply\",\"id\":1,\"ok\":true,\"result\":{\"pad\":\"", COINMECH_MAX_LINE},
                                 {S_HOLD, 0, 0}, {S_END, 0, 0}};
        fake f;
        coinmech_conn *c = open_fake(&f, s);
        char buf[64];
        int st = coinmech_status_json(c, buf, sizeof buf, NULL);
        CHECK_STATUS(st, COINMECH_E_LINE_TOO_LONG, c);
        coinmech_close(c);
        fake_finish(&f, "too long");
    }
    {   /* Exactly the cap (newline excluded) is read. */
        static const char prefix[] = "{\"type\":\"reply\",\"id\":1,\"ok\":true,\"result\":{\"pad\":\"";
        static const step s[] = {{S_SEND, HELLO, 0}, {S_EXPECT, "{\"cmd\":\"status\",\"id\":1}", 0},
                                 {S_SEND_BIG, prefix, COINMECH_MAX_LINE - (sizeof prefix - 1) - 3},
                                 {S_HOLD, 0, 0}, {S_END, 0, 0}};
        fake f;
        coinmech_conn *c = open_fake(&f, s);
        size_t len = 0;
        int st = coinmech_status_json(c, NULL, 0, &len);
        CHECK_STATUS(st, COINMECH_E_TRUNCATED, c);
        CHECK(len == COINMECH_MAX_LINE - (sizeof "{\"type\":\"reply\",\"id\":1,\"ok\":true,\"result\":" - 1) - 1,
              "the result's length %zu", len);
        coinmech_close(c);
        fake_finish(&f, "at the cap");
    }
    {   /* Closed in the middle of a reply. */
        static const step s[] = {{S_SEND, HELLO, 0}, {S_EXPECT, "{\"cmd\":\"status\",\"id\":1}", 0},
                                 {S_SEND_RAW, "{\"type\":\"reply\",\"id\":1,", 23}, {S_CLOSE, 0, 0}, {S_END, 0, 0}};
        fake f;
        coinmech_conn *c = open_fake(&f, s);
        char buf[64];
        int st = coinmech_status_json(c, buf, sizeof buf, NULL);
        CHECK_STATUS(st, COINMECH_E_CLOSED, c);
        CHECK(strstr(coinmech_last_error(c), "middle of a line") != NULL, "says mid-line: %s", coinmech_last_error(c));
        coinmech_close(c);
        fake_finish(&f, "closed mid-line");
    }
    {   /* Closed between lines; and a reply that never comes: a timeout leaves it usable. */
        static const step s[] = {{S_SEND, HELLO, 0},
                                 {S_EXPECT, "{\"cmd\":\"status\",\"id\":1}", 0},
                                 {S_EXPECT, "{\"cmd\":\"status\",\"id\":2}", 0},
                                 {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"late\":true},\"type\":\"reply\"}", 0},
                                 {S_SEND, "{\"id\":2,\"ok\":true,\"result\":{\"late\":false},\"type\":\"reply\"}", 0},
                                 {S_CLOSE, 0, 0},
                                 {S_END, 0, 0}};
        fake f;
        coinmech_conn *c = open_fake(&f, s);
        char buf[64];
        coinmech_set_reply_timeout(c, 100);
        int st = coinmech_status_json(c, buf, sizeof buf, NULL);
        CHECK_STATUS(st, COINMECH_E_TIMEOUT, c);
        coinmech_set_reply_timeout(c, 5000);
        st = coinmech_status_json(c, buf, sizeof buf, NULL);
        CHECK_STATUS(st, 0, c);
        CHECK(strcmp(buf, "{\"late\":false}") == 0, "the late reply is skipped, its own is read: %s", buf);
        st = coinmech_status_json(c, buf, sizeof buf, NULL);
        CHECK_STATUS(st, COINMECH_E_CLOSED, c);
        coinmech_close(c);
        fake_finish(&f, "timeout");
    }
}

static void test_error_replies(void) {
    static const struct {
        const char *code;
        int status;
    } codes[] = {{"bad_json", COINMECH_E_BAD_JSON},           {"bad_request", COINMECH_E_BAD_REQUEST},
                 {"unknown_command", COINMECH_E_UNKNOWN_COMMAND}, {"line_too_long", COINMECH_E_REQUEST_LINE_TOO_LONG},
                 {"forbidden", COINMECH_E_FORBIDDEN},         {"unavailable", COINMECH_E_UNAVAILABLE},
                 {"failed", COINMECH_E_FAILED},               {"something_new", COINMECH_E_DAEMON_OTHER}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        char reply[256];
        snprintf(reply, sizeof reply,
                 "{\"error\":{\"code\":\"%s\",\"message\":\"why \\\"%zu\\\"\"},\"id\":1,\"ok\":false,\"type\":\"reply\"}", codes[i].code, i);
        step s[] = {{S_SEND, HELLO, 0},
                    {S_EXPECT, "{\"cmd\":\"credit\",\"id\":1}", 0},
                    {S_SEND, reply, 0},
                    {S_EXPECT, "{\"cmd\":\"status\",\"id\":2}", 0},
                    {S_SEND, "{\"id\":2,\"ok\":true,\"result\":{\"ledger\":\"ok\"},\"type\":\"reply\"}", 0},
                    {S_HOLD, 0, 0},
                    {S_END, 0, 0}};
        fake f;
        coinmech_conn *c = open_fake(&f, s);
        coinmech_balance b[2];
        size_t count = 99;
        int st = coinmech_credit(c, b, 2, &count);
        CHECK_STATUS(st, codes[i].status, c);
        char want[64];
        snprintf(want, sizeof want, "%s: why \"%zu\"", codes[i].code, i);
        CHECK(strstr(coinmech_last_error(c), want) != NULL, "message %s has %s", coinmech_last_error(c), want);
        CHECK(strcmp(coinmech_last_daemon_code(c), codes[i].code) == 0, "code %s", coinmech_last_daemon_code(c));
        /* An error reply leaves the connection open. */
        char buf[64];
        st = coinmech_status_json(c, buf, sizeof buf, NULL);
        CHECK_STATUS(st, 0, c);
        CHECK(strcmp(buf, "{\"ledger\":\"ok\"}") == 0, "status after an error: %s", buf);
        CHECK(coinmech_last_daemon_code(c)[0] == '\0', "a success clears the code");
        coinmech_close(c);
        fake_finish(&f, codes[i].code);
    }
}

static void test_reads(void) {
    static const step s[] = {
        {S_SEND, HELLO, 0},
        {S_EXPECT, "{\"cmd\":\"status\",\"id\":1}", 0},
        {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"ledger\":\"ok\",\"source\":{\"kind\":\"serial\"},\"x\":\"\\u00e9\\ud83d\\ude00\"},\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"status\",\"id\":2}", 0},
        {S_SEND, "{\"id\":2,\"ok\":true,\"result\":{\"ledger\":\"ok\"},\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"credit\",\"id\":3}", 0},
        {S_SEND, "{\"id\":3,\"ok\":true,\"result\":{\"accounts\":[{\"account\":\"coinmech0\",\"balance_minor\":150,\"currency\":\"USD\",\"moved_seq\":412},"
                 "{\"account\":\"coinmech0-eur\",\"balance_minor\":-0,\"currency\":\"EUR\",\"moved_seq\":9}],\"source\":\"coinmech0\"},\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"credit\",\"id\":4}", 0},
        {S_SEND, "{\"id\":4,\"ok\":true,\"result\":{\"accounts\":[{\"account\":\"a\",\"balance_minor\":1,\"currency\":\"USD\"},"
                 "{\"account\":\"b\",\"balance_minor\":2,\"currency\":\"EUR\"}],\"source\":\"s\"},\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"credit\",\"id\":5}", 0},
        {S_SEND, "{\"id\":5,\"ok\":true,\"result\":{\"accounts\":[{\"account\":\"a\",\"balance_minor\":1.5,\"currency\":\"USD\"}],\"source\":\"s\"},\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"events\",\"since\":0,\"limit\":2,\"id\":6}", 0},
        {S_SEND, "{\"id\":6,\"ok\":true,\"result\":{\"events\":[],\"last_seq\":0},\"type\":\"reply\"}", 0},
        {S_HOLD, 0, 0},
        {S_END, 0, 0}};
    fake f;
    coinmech_conn *c = open_fake(&f, s);
    char buf[256];
    size_t len = 0;
    int st = coinmech_status_json(c, buf, sizeof buf, &len);
    CHECK_STATUS(st, 0, c);
    CHECK(strncmp(buf, "{\"ledger\":\"ok\",\"source\":{\"kind\":\"serial\"}", 40) == 0 && len == strlen(buf), "status %s (%zu)", buf, len);
    {   /* the result as written, escapes and all; and its string decoded */
        cmj_span doc, v;
        char text[16];
        CHECK(cmj_document(buf, len, &doc) == 0 && cmj_get(doc, "x", &v) && cmj_string(v, text, sizeof text) == 0 &&
                  strcmp(text, "\xc3\xa9\xf0\x9f\x98\x80") == 0, "\\u escapes decode to UTF-8");
    }
    st = coinmech_status_json(c, buf, 5, &len);
    CHECK_STATUS(st, COINMECH_E_TRUNCATED, c);
    CHECK(len == strlen("{\"ledger\":\"ok\"}") && buf[0] == '\0', "a short buffer gets the size it needs: %zu", len);
    coinmech_balance b[3];
    size_t count = 0;
    st = coinmech_credit(c, b, 3, &count);
    CHECK_STATUS(st, 0, c);
    CHECK(count == 2, "two accounts, got %zu", count);
    CHECK(strcmp(b[0].source, "coinmech0") == 0 && strcmp(b[0].account, "coinmech0") == 0 && strcmp(b[0].currency, "USD") == 0 &&
              b[0].balance_minor == 150 && b[0].moved_seq == 412, "account 0: %s %s %s %lld %lld", b[0].source, b[0].account,
          b[0].currency, (long long)b[0].balance_minor, (long long)b[0].moved_seq);
    CHECK(strcmp(b[1].currency, "EUR") == 0 && b[1].balance_minor == 0 && b[1].moved_seq == 9, "account 1");
    count = 0;
    st = coinmech_credit(c, b, 1, &count);
    CHECK_STATUS(st, COINMECH_E_TRUNCATED, c);
    CHECK(count == 2 && strcmp(b[0].account, "a") == 0 && b[0].moved_seq == -1, "one of two written, count %zu", count);
    st = coinmech_credit(c, b, 3, &count);
    CHECK_STATUS(st, COINMECH_E_PROTOCOL, c);
    st = coinmech_call(c, "{\"cmd\":\"events\",\"since\":0,\"limit\":2}", buf, sizeof buf, &len);
    CHECK_STATUS(st, 0, c);
    CHECK(strcmp(buf, "{\"events\":[],\"last_seq\":0}") == 0, "events %s", buf);
    CHECK(coinmech_call(c, "{\"cmd\":\"status\",\"id\":9}", buf, sizeof buf, NULL) == -EINVAL, "a request with an id is refused");
    CHECK(coinmech_call(c, "{\"cmd\":", buf, sizeof buf, NULL) == -EINVAL, "a request that is not JSON is refused");
    coinmech_close(c);
    fake_finish(&f, "reads");
}

static void test_request_too_long(void) {
    static const step s[] = {{S_SEND, HELLO, 0}, {S_HOLD, 0, 0}, {S_END, 0, 0}};
    fake f;
    coinmech_conn *c = open_fake(&f, s);
    static char req[COINMECH_MAX_REQUEST + 100];
    memset(req, 0, sizeof req);
    strcpy(req, "{\"cmd\":\"explain\",\"pad\":\"");
    memset(req + strlen(req), 'y', COINMECH_MAX_REQUEST - 30);
    strcat(req, "\"}");
    char buf[64];
    int st = coinmech_call(c, req, buf, sizeof buf, NULL);
    CHECK_STATUS(st, COINMECH_E_REQUEST_TOO_LONG, c);
    coinmech_result r;
    CHECK(coinmech_spend(c, 150, "A\n4", "sale-7", &r) == -EINVAL, "an item with a control character");
    CHECK(coinmech_spend(c, 0, "A4", "sale-7", &r) == -EINVAL, "an amount of 0");
    CHECK(coinmech_spend(c, 5, NULL, "sale 7", &r) == -EINVAL, "a request id with a space");
    CHECK(coinmech_spend(c, 5, NULL, "", &r) == -EINVAL, "an empty request id");
    CHECK(coinmech_spend(c, 5, NULL, NULL, &r) == -EINVAL, "no request id");
    CHECK(coinmech_spend_currency(c, 5, "usd", NULL, "x", &r) == -EINVAL, "a lower-case currency");
    CHECK(coinmech_refund(c, "0123456789012345678901234567890123456789012345678901234567890123X", &r) == -EINVAL, "65 characters");
    CHECK(strstr(coinmech_last_error(c), "64") != NULL, "the message says why: %s", coinmech_last_error(c));
    coinmech_close(c); /* nothing was sent: the fake holds until the close */
    fake_finish(&f, "too long request");
}

static void test_money(void) {
    static const step s[] = {
        {S_SEND, HELLO, 0},
        {S_EXPECT, "{\"cmd\":\"spend\",\"amount_minor\":150,\"request_id\":\"sale-7\",\"item\":\"A\\\"4\xc3\xa9\",\"id\":1}", 0},
        {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"amount_minor\":150,\"balance_minor\":25,\"currency\":\"USD\",\"item\":\"A\\\"4\\u00e9\",\"repeated\":false,"
                 "\"request_id\":\"sale-7\",\"seq\":413,\"state\":\"approved\"},\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"spend\",\"amount_minor\":150,\"request_id\":\"sale-8\",\"currency\":\"USD\",\"id\":2}", 0},
        {S_SEND, "{\"id\":2,\"ok\":true,\"result\":{\"amount_minor\":150,\"balance_minor\":100,\"currency\":\"USD\",\"reason\":\"credit_short\","
                 "\"request_id\":\"sale-8\",\"state\":\"refused\"},\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"refund\",\"request_id\":\"sale-7\",\"id\":3}", 0},
        {S_SEND, "{\"id\":3,\"ok\":true,\"result\":{\"amount_minor\":150,\"balance_minor\":175,\"currency\":\"USD\",\"repeated\":false,"
                 "\"request_id\":\"sale-7\",\"seq\":414,\"state\":\"refunded\"},\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"cancel\",\"request_id\":\"esc-3\",\"id\":4}", 0},
        {S_SEND, "{\"id\":4,\"ok\":true,\"result\":{\"balance_minor\":0,\"currency\":\"USD\",\"kept_minor\":0,\"payout\":{\"amount_minor\":175,"
                 "\"coins\":[{\"coin_id\":\"USD25\",\"count\":7,\"type\":2,\"value_minor\":25}],\"debt_minor\":0,\"paid_minor\":175,\"state\":\"done\"},"
                 "\"request_id\":\"esc-3\",\"state\":\"returned\"},\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"cancel\",\"request_id\":\"esc-4\",\"id\":5}", 0},
        {S_SEND, "{\"id\":5,\"ok\":true,\"result\":{\"balance_minor\":150,\"currency\":\"USD\",\"reason\":\"no device here pays change: the credit stays\","
                 "\"request_id\":\"esc-4\",\"state\":\"kept\"},\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"spend\",\"amount_minor\":99,\"request_id\":\"sale-7\",\"id\":6}", 0},
        {S_SEND, "{\"error\":{\"code\":\"bad_request\",\"message\":\"request id 'sale-7' was used for 150\"},\"id\":6,\"ok\":false,\"type\":\"reply\"}", 0},
        {S_EXPECT, "{\"cmd\":\"spend\",\"amount_minor\":5,\"request_id\":\"x\",\"id\":7}", 0},
        {S_SEND, "{\"id\":7,\"ok\":true,\"result\":{\"amount_minor\":\"5\",\"state\":\"approved\"},\"type\":\"reply\"}", 0},
        {S_HOLD, 0, 0},
        {S_END, 0, 0}};
    fake f;
    coinmech_conn *c = open_fake(&f, s);
    coinmech_result r;
    int st = coinmech_spend(c, 150, "A\"4\xc3\xa9", "sale-7", &r);
    CHECK_STATUS(st, 0, c);
    CHECK(r.state == COINMECH_STATE_APPROVED && r.amount_minor == 150 && r.balance_minor == 25 && r.seq == 413 && !r.repeated &&
              strcmp(r.item, "A\"4\xc3\xa9") == 0 && strcmp(r.request_id, "sale-7") == 0 && strcmp(r.currency, "USD") == 0,
          "approved: state %d %s", r.state, r.state_text);
    st = coinmech_spend_currency(c, 150, "USD", NULL, "sale-8", &r);
    CHECK_STATUS(st, 0, c);
    CHECK(r.state == COINMECH_STATE_REFUSED && strcmp(r.reason, "credit_short") == 0 && r.balance_minor == 100 && r.seq == -1,
          "refused: %d %s", r.state, r.reason);
    st = coinmech_refund(c, "sale-7", &r);
    CHECK_STATUS(st, 0, c);
    CHECK(r.state == COINMECH_STATE_REFUNDED && r.balance_minor == 175 && r.seq == 414, "refunded");
    st = coinmech_cancel(c, "esc-3", &r);
    CHECK_STATUS(st, 0, c);
    CHECK(r.state == COINMECH_STATE_RETURNED && r.has_payout && strcmp(r.payout_state, "done") == 0 && r.paid_minor == 175 &&
              r.debt_minor == 0 && r.kept_minor == 0 && r.balance_minor == 0, "returned with its payout");
    st = coinmech_cancel(c, "esc-4", &r);
    CHECK_STATUS(st, 0, c);
    CHECK(r.state == COINMECH_STATE_KEPT && !r.has_payout && strstr(r.reason, "credit stays") && r.balance_minor == 150, "kept");
    st = coinmech_spend(c, 99, NULL, "sale-7", &r);
    CHECK_STATUS(st, COINMECH_E_BAD_REQUEST, c);
    CHECK(strstr(coinmech_last_error(c), "was used for 150") != NULL, "%s", coinmech_last_error(c));
    st = coinmech_spend(c, 5, NULL, "x", &r);
    CHECK_STATUS(st, COINMECH_E_PROTOCOL, c);
    coinmech_close(c);
    fake_finish(&f, "money");
}

/* The reply to a spend is lost with the connection: the retry on a new one reuses the id, and
 * the daemon's answer from its ledger says repeated. */
static void test_retry_same_id(void) {
    static const char *spend = "{\"cmd\":\"spend\",\"amount_minor\":150,\"request_id\":\"%s\",\"item\":\"A4\",\"id\":1}";
    char id[COINMECH_REQUEST_ID_SIZE];
    CHECK(coinmech_new_request_id(id) == 0, "a request id");
    char expect[256], reply[512];
    snprintf(expect, sizeof expect, spend, id);
    snprintf(reply, sizeof reply,
             "{\"id\":1,\"ok\":true,\"result\":{\"amount_minor\":150,\"balance_minor\":25,\"currency\":\"USD\",\"item\":\"A4\",\"repeated\":true,"
             "\"request_id\":\"%s\",\"seq\":413,\"state\":\"approved\"},\"type\":\"reply\"}", id);
    step s[] = {{S_SEND, HELLO, 0}, {S_EXPECT, expect, 0}, {S_CLOSE, 0, 0}, {S_ACCEPT, 0, 0}, {S_SEND, HELLO, 0},
                {S_EXPECT, expect, 0}, {S_SEND, reply, 0}, {S_HOLD, 0, 0}, {S_END, 0, 0}};
    fake f;
    coinmech_conn *c = open_fake(&f, s);
    coinmech_result r;
    int st = coinmech_spend(c, 150, "A4", id, &r);
    CHECK_STATUS(st, COINMECH_E_CLOSED, c);
    coinmech_close(c);
    char err[256];
    st = coinmech_connect(f.path, &c, err, sizeof err);
    CHECK(st == 0, "reconnect: %s", err);
    st = coinmech_spend(c, 150, "A4", id, &r);
    CHECK_STATUS(st, 0, c);
    CHECK(r.state == COINMECH_STATE_APPROVED && r.repeated && strcmp(r.request_id, id) == 0 && r.seq == 413, "the repeat's answer");
    coinmech_close(c);
    fake_finish(&f, "retry");
}

static void test_request_ids(void) {
    char a[COINMECH_REQUEST_ID_SIZE], b[COINMECH_REQUEST_ID_SIZE];
    for (int i = 0; i < 200; i++) {
        CHECK(coinmech_new_request_id(a) == 0 && coinmech_new_request_id(b) == 0, "getrandom");
        CHECK(strlen(a) == 36 && a[8] == '-' && a[13] == '-' && a[14] == '4' && a[18] == '-' && a[23] == '-' &&
                  strchr("89ab", a[19]) != NULL, "a UUID v4: %s", a);
        CHECK(strcmp(a, b) != 0, "two ids differ");
    }
}

#define EV(seq, body) "{\"event\":" body ",\"seq\":" #seq ",\"type\":\"event\"}"

static void test_events(void) {
    static const step s[] = {
        {S_SEND, HELLO, 0},
        {S_EXPECT, "{\"cmd\":\"subscribe\",\"since\":5,\"id\":1}", 0},
        {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"pending\":false,\"seq\":41,\"since\":5},\"type\":\"reply\"}", 0},
        {S_SEND, EV(6, "{\"currency\":\"USD\",\"denomination\":\"quarter\",\"kind\":\"coin\",\"ref_seq\":5,\"seq\":6,\"source\":\"serial\",\"time\":1795286946.46,\"value_minor\":25}"), 0},
        {S_SEND, EV(7, "{\"currency\":\"USD\",\"detail\":{\"account\":\"coinmech0\",\"balance_minor\":\"10\",\"by\":\"kiosk\",\"item\":\"A4\",\"request_id\":\"sale-7\"},"
                       "\"kind\":\"credit_spent\",\"seq\":7,\"source\":\"serial\",\"value_minor\":15}"), 0},
        {S_SEND, "{\"type\":\"something_later\",\"x\":1}", 0},
        {S_SEND, EV(9, "{\"kind\":\"decision\",\"reason\":\"too_light\",\"source\":\"serial\",\"verdict\":\"reject\",\"detail\":{\"k\":\"v\"}}"), 0},
        {S_SEND, EV(10, "{\"kind\":\"source_lost\",\"source\":\"a-source-name-that-is-far-longer-than-sixty-three-bytes-so-it-is-cut-to-fit\"}"), 0},
        {S_SEND, EV(11, "{\"kind\":\"coin\",\"value_minor\":2.5}"), 0},
        {S_HOLD, 0, 0},
        {S_END, 0, 0}};
    fake f;
    coinmech_conn *c = open_fake(&f, s);
    coinmech_event e;
    int st = coinmech_next_event(c, &e, 100);
    CHECK_STATUS(st, COINMECH_E_STATE, c);
    st = coinmech_subscribe(c, 5);
    CHECK_STATUS(st, 0, c);
    char buf[64];
    st = coinmech_status_json(c, buf, sizeof buf, NULL);
    CHECK_STATUS(st, COINMECH_E_STATE, c);
    st = coinmech_next_event(c, &e, 5000);
    CHECK_STATUS(st, 0, c);
    CHECK(e.seq == 6 && strcmp(e.kind, "coin") == 0 && strcmp(e.source, "serial") == 0 && strcmp(e.currency, "USD") == 0 &&
              strcmp(e.denomination, "quarter") == 0 && e.has_value_minor && e.value_minor == 25 && !e.has_balance_minor,
          "the coin event: %lld %s", (long long)e.seq, e.kind);
    CHECK(e.json && e.json_len > 0 && e.json[0] == '{' && e.json[e.json_len - 1] == '}', "its JSON");
    st = coinmech_next_event(c, &e, 5000);
    CHECK_STATUS(st, 0, c);
    CHECK(e.seq == 7 && strcmp(e.kind, "credit_spent") == 0 && e.value_minor == 15 && e.has_balance_minor && e.balance_minor == 10 &&
              strcmp(e.request_id, "sale-7") == 0, "the credit event");
    st = coinmech_next_event(c, &e, 5000);
    CHECK_STATUS(st, 0, c);
    CHECK(e.seq == 9 && strcmp(e.verdict, "reject") == 0 && strcmp(e.reason, "too_light") == 0 && !e.has_value_minor && !e.truncated,
          "an unknown message type is skipped; a decision");
    st = coinmech_next_event(c, &e, 5000);
    CHECK_STATUS(st, 0, c);
    CHECK(e.seq == 10 && e.truncated && strlen(e.source) == sizeof e.source - 1, "a long source is cut: %s", e.source);
    st = coinmech_next_event(c, &e, 5000);
    CHECK_STATUS(st, COINMECH_E_PROTOCOL, c);
    coinmech_close(c);
    fake_finish(&f, "events");

    /* Timeouts, the daemon's cut-off, an overflow. */
    static const step s2[] = {
        {S_SEND, "{\"daemon\":\"coinmechd\",\"protocol\":2,\"seq\":0,\"type\":\"hello\",\"version\":\"0.5.0\"}", 0},
        {S_EXPECT, "{\"cmd\":\"subscribe\",\"pending\":true,\"id\":1}", 0},
        {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"pending\":true,\"seq\":0,\"since\":0},\"type\":\"reply\"}", 0},
        {S_HOLD, 0, 0},
        {S_END, 0, 0}};
    c = open_fake(&f, s2);
    st = coinmech_subscribe_ex(c, COINMECH_SINCE_NOW, COINMECH_SUBSCRIBE_PENDING);
    CHECK_STATUS(st, 0, c);
    CHECK(coinmech_resume_from(c) == -1, "no overflow yet");
    int64_t t0 = now_ms();
    st = coinmech_next_event(c, &e, 0);
    CHECK_STATUS(st, COINMECH_E_TIMEOUT, c);
    st = coinmech_next_event(c, &e, 150);
    CHECK_STATUS(st, COINMECH_E_TIMEOUT, c);
    CHECK(now_ms() - t0 >= 140 && now_ms() - t0 < 3000, "the timeout is kept: %lld ms", (long long)(now_ms() - t0));
    coinmech_close(c);
    fake_finish(&f, "event timeouts");

    static const step s3[] = {
        {S_SEND, HELLO, 0},
        {S_EXPECT, "{\"cmd\":\"subscribe\",\"since\":0,\"id\":1}", 0},
        {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"pending\":false,\"seq\":41,\"since\":0},\"type\":\"reply\"}", 0},
        {S_SEND, EV(1, "{\"kind\":\"startup\"}"), 0},
        {S_SEND, "{\"resume_from\":1,\"type\":\"overflow\"}", 0},
        {S_HOLD, 0, 0},
        {S_END, 0, 0}};
    c = open_fake(&f, s3);
    st = coinmech_subscribe(c, 0);
    CHECK_STATUS(st, 0, c);
    st = coinmech_next_event(c, &e, 5000);
    CHECK(st == 0 && e.seq == 1, "event 1");
    st = coinmech_next_event(c, &e, 5000);
    CHECK_STATUS(st, COINMECH_E_OVERFLOW, c);
    CHECK(coinmech_resume_from(c) == 1, "resume from %lld", (long long)coinmech_resume_from(c));
    st = coinmech_next_event(c, &e, 5000);
    CHECK_STATUS(st, COINMECH_E_OVERFLOW, c);
    coinmech_close(c);
    fake_finish(&f, "overflow");

    static const step s4[] = {
        {S_SEND, HELLO, 0},
        {S_EXPECT, "{\"cmd\":\"subscribe\",\"id\":1}", 0},
        {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"pending\":false,\"seq\":41,\"since\":41},\"type\":\"reply\"}", 0},
        {S_SEND, "{\"error\":{\"code\":\"unavailable\",\"message\":\"replies left unread for 60 s\"},\"id\":null,\"ok\":false,\"type\":\"reply\"}", 0},
        {S_CLOSE, 0, 0},
        {S_END, 0, 0}};
    c = open_fake(&f, s4);
    st = coinmech_subscribe(c, COINMECH_SINCE_NOW);
    CHECK_STATUS(st, 0, c);
    st = coinmech_next_event(c, &e, 5000);
    CHECK_STATUS(st, COINMECH_E_UNAVAILABLE, c);
    CHECK(strstr(coinmech_last_error(c), "left unread") != NULL, "%s", coinmech_last_error(c));
    coinmech_close(c);
    fake_finish(&f, "cut off");
}

/* ---- watch against the fake ---- */

typedef struct {
    int64_t seen[64];
    int n;
    int stop_at;     /* acknowledge this seq and stop */
    int refuse_at;   /* do not acknowledge this seq: stop */
    int disconnects;
} watch_log;

static int watch_record(const coinmech_event *e, void *user) {
    watch_log *log = user;
    if (e->seq == log->refuse_at) {
        log->refuse_at = -1;
        return -7;
    }
    if (log->n < 64) log->seen[log->n++] = e->seq;
    return e->seq == log->stop_at ? 1 : 0;
}

static void watch_disconnected(int status, const char *message, void *user) {
    (void)status;
    (void)message;
    ((watch_log *)user)->disconnects++;
}

static void test_watch(void) {
    static const step s[] = {
        {S_SEND, "{\"daemon\":\"coinmechd\",\"protocol\":2,\"seq\":10,\"type\":\"hello\",\"version\":\"0.5.0\"}", 0},
        {S_EXPECT, "{\"cmd\":\"subscribe\",\"since\":10,\"id\":1}", 0},
        {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"pending\":false,\"seq\":10,\"since\":10},\"type\":\"reply\"}", 0},
        {S_SEND, EV(11, "{\"kind\":\"coin\",\"value_minor\":25}"), 0},
        {S_SEND, EV(12, "{\"kind\":\"coin\",\"value_minor\":10}"), 0},
        {S_SEND_RAW, "{\"event\":{\"kind\":\"co", 20}, /* closed mid-line */
        {S_ACCEPT, 0, 0},
        {S_SEND, "{\"daemon\":\"coinmechd\",\"protocol\":2,\"seq\":14,\"type\":\"hello\",\"version\":\"0.5.0\"}", 0},
        {S_EXPECT, "{\"cmd\":\"subscribe\",\"since\":12,\"id\":1}", 0},
        {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"pending\":false,\"seq\":14,\"since\":12},\"type\":\"reply\"}", 0},
        {S_SEND, EV(12, "{\"kind\":\"coin\",\"value_minor\":10}"), 0}, /* a repeat the watch must drop */
        {S_SEND, EV(13, "{\"kind\":\"coin\",\"value_minor\":5}"), 0},
        {S_SEND, "{\"resume_from\":13,\"type\":\"overflow\"}", 0},
        {S_ACCEPT, 0, 0},
        {S_SEND, "this is no hello", 0}, /* a broken daemon: the watch tries again */
        {S_ACCEPT, 0, 0},
        {S_SEND, "{\"daemon\":\"coinmechd\",\"protocol\":2,\"seq\":15,\"type\":\"hello\",\"version\":\"0.5.0\"}", 0},
        {S_EXPECT, "{\"cmd\":\"subscribe\",\"since\":13,\"id\":1}", 0},
        {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"pending\":false,\"seq\":15,\"since\":13},\"type\":\"reply\"}", 0},
        {S_SEND, EV(14, "{\"kind\":\"coin\",\"value_minor\":1}"), 0},
        {S_SEND, EV(15, "{\"kind\":\"coin\",\"value_minor\":1}"), 0},
        {S_HOLD, 0, 0},
        /* The callback refused 15: the next watch asks from 14 and gets 15 again. */
        {S_ACCEPT, 0, 0},
        {S_SEND, "{\"daemon\":\"coinmechd\",\"protocol\":2,\"seq\":16,\"type\":\"hello\",\"version\":\"0.5.0\"}", 0},
        {S_EXPECT, "{\"cmd\":\"subscribe\",\"since\":14,\"id\":1}", 0},
        {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"pending\":false,\"seq\":16,\"since\":14},\"type\":\"reply\"}", 0},
        {S_SEND, EV(15, "{\"kind\":\"coin\",\"value_minor\":1}"), 0},
        {S_SEND, EV(16, "{\"kind\":\"coin\",\"value_minor\":1}"), 0},
        {S_HOLD, 0, 0},
        {S_END, 0, 0}};
    fake f;
    fake_start(&f, s);
    watch_log log = {.stop_at = 16, .refuse_at = 15};
    coinmech_watch_options o = {.idle_timeout_ms = 10000, .give_up_ms = 10000, .on_disconnect = watch_disconnected};
    int64_t acked = COINMECH_SINCE_NOW;
    char err[256] = "";
    int st = coinmech_watch(f.path, &acked, watch_record, &log, &o, err, sizeof err);
    CHECK(st == -7, "the callback's refusal ends the watch: %d (%s)", st, err);
    CHECK(acked == 14, "acknowledged up to 14, got %lld", (long long)acked);
    st = coinmech_watch(f.path, &acked, watch_record, &log, &o, err, sizeof err);
    CHECK(st == 0, "the second watch ends at 16: %d (%s)", st, err);
    CHECK(acked == 16, "acknowledged up to 16, got %lld", (long long)acked);
    int ok = log.n == 6;
    for (int i = 0; ok && i < 6; i++) ok = log.seen[i] == 11 + i;
    CHECK(ok, "seen 11..16 once each (%d events: %lld %lld %lld ...)", log.n, (long long)log.seen[0], (long long)log.seen[1],
          (long long)log.seen[2]);
    CHECK(log.disconnects == 3, "three lost connections reported, %d", log.disconnects);
    fake_finish(&f, "watch");

    /* Fatal: another protocol. Give-up: nothing there. Idle: no events. Stop flag. */
    static const step s2[] = {{S_SEND, "{\"protocol\":1,\"seq\":1,\"type\":\"hello\"}", 0}, {S_END, 0, 0}};
    fake_start(&f, s2);
    acked = 0;
    st = coinmech_watch(f.path, &acked, watch_record, &log, &o, err, sizeof err);
    CHECK(st == COINMECH_E_VERSION && strstr(err, "protocol 1"), "another protocol stops the watch: %d %s", st, err);
    fake_finish(&f, "watch version");

    coinmech_watch_options quick = {.give_up_ms = 300};
    int64_t t0 = now_ms();
    st = coinmech_watch("/tmp/cm-no-such-dir/x.sock", &acked, watch_record, &log, &quick, err, sizeof err);
    CHECK(st == -ENOENT && now_ms() - t0 >= 290 && now_ms() - t0 < 5000, "gives up after 300 ms: %d %s", st, err);

    static const step s3[] = {{S_SEND, HELLO, 0},
                              {S_EXPECT, "{\"cmd\":\"subscribe\",\"since\":41,\"id\":1}", 0},
                              {S_SEND, "{\"id\":1,\"ok\":true,\"result\":{\"pending\":false,\"seq\":41,\"since\":41},\"type\":\"reply\"}", 0},
                              {S_HOLD, 0, 0},
                              {S_END, 0, 0}};
    fake_start(&f, s3);
    coinmech_watch_options idle = {.idle_timeout_ms = 250};
    acked = COINMECH_SINCE_NOW;
    st = coinmech_watch(f.path, &acked, watch_record, &log, &idle, err, sizeof err);
    CHECK(st == COINMECH_E_TIMEOUT && acked == 41, "idle: %d %s, acked %lld", st, err, (long long)acked);
    fake_finish(&f, "watch idle");

    static const step s4[] = {{S_SEND, HELLO, 0},
                              {S_EXPECT, "{\"cmd\":\"subscribe\",\"since\":3,\"id\":1}", 0},
                              {S_SEND, "{\"error\":{\"code\":\"forbidden\",\"message\":\"no\"},\"id\":1,\"ok\":false,\"type\":\"reply\"}", 0},
                              {S_HOLD, 0, 0},
                              {S_END, 0, 0}};
    fake_start(&f, s4);
    acked = 3;
    st = coinmech_watch(f.path, &acked, watch_record, &log, NULL, err, sizeof err);
    CHECK(st == COINMECH_E_FORBIDDEN && strstr(err, "forbidden: no"), "forbidden stops the watch: %d %s", st, err);
    fake_finish(&f, "watch forbidden");

    volatile sig_atomic_t stop = 1;
    coinmech_watch_options stopped = {.stop = &stop};
    st = coinmech_watch("/tmp/cm-no-such-dir/x.sock", &acked, watch_record, &log, &stopped, err, sizeof err);
    CHECK(st == COINMECH_E_STOPPED, "the stop flag: %d", st);
    CHECK(coinmech_watch(NULL, NULL, watch_record, &log, NULL, err, sizeof err) == -EINVAL, "no acked_seq");
}

/* ==== fuzzing ================================================================================ */

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static const char *corpus[] = {
    "{\"daemon\":\"coinmechd\",\"protocol\":2,\"seq\":41,\"type\":\"hello\",\"version\":\"0.5.0\"}",
    "{\"id\":1,\"ok\":true,\"result\":{\"accounts\":[{\"account\":\"coinmech0\",\"balance_minor\":150,\"currency\":\"USD\",\"moved_seq\":412}],\"source\":\"coinmech0\"},\"type\":\"reply\"}",
    "{\"error\":{\"code\":\"bad_request\",\"message\":\"why \\u00e9\\ud83d\\ude00\"},\"id\":1,\"ok\":false,\"type\":\"reply\"}",
    "{\"id\":1,\"ok\":true,\"result\":{\"amount_minor\":150,\"balance_minor\":25,\"currency\":\"USD\",\"item\":\"A4\",\"repeated\":false,\"request_id\":\"sale-7\",\"seq\":413,\"state\":\"approved\",\"payout\":{\"state\":\"done\",\"paid_minor\":5,\"debt_minor\":0}},\"type\":\"reply\"}",
    EV(7, "{\"currency\":\"USD\",\"detail\":{\"account\":\"coinmech0\",\"balance_minor\":10,\"request_id\":\"sale-7\"},\"kind\":\"credit_spent\",\"seq\":7,\"source\":\"serial\",\"value_minor\":15,\"weight_g\":5.67e0}"),
    "{\"resume_from\":77,\"type\":\"overflow\"}",
    "[1,-0.5e+10,true,false,null,\"\\\"\\\\\\/\\b\\f\\n\\r\\t\",{},[]]",
};

/* Bytes a mutation likes to insert. */
static const char alphabet[] = "{}[]\",:\\u0123456789abcdefE.-+ \ttrue false null\x00\x01\x7f\xc3\xa9\xff\n";

static size_t mutate(char *buf, size_t n, size_t cap) {
    int rounds = 1 + (int)(rnd() % 6);
    for (int r = 0; r < rounds; r++) {
        size_t at = n ? rnd() % (n + 1) : 0;
        switch (rnd() % 6) {
        case 0: /* flip a byte */
            if (n) buf[rnd() % n] = (char)rnd();
            break;
        case 1: /* insert one */
            if (n + 1 < cap) {
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = alphabet[rnd() % (sizeof alphabet - 1)];
                n++;
            }
            break;
        case 2: /* delete a run */
            if (n) {
                size_t k = 1 + rnd() % 8;
                if (at + k > n) k = n - at;
                memmove(buf + at, buf + at + k, n - at - k);
                n -= k;
            }
            break;
        case 3: /* duplicate a run */
            if (n) {
                size_t from = rnd() % n, k = 1 + rnd() % 32;
                if (from + k > n) k = n - from;
                if (n + k < cap) {
                    memmove(buf + at + k, buf + at, n - at);
                    memmove(buf + at, buf + (from >= at ? from + k : from), k);
                    n += k;
                }
            }
            break;
        case 4: /* truncate */
            n = at;
            break;
        default: /* nest deeply */
            if (n + 80 < cap) {
                size_t k = 1 + rnd() % 40;
                memmove(buf + at + k, buf + at, n - at);
                memset(buf + at, rnd() & 1 ? '[' : '{', k);
                n += k;
            }
            break;
        }
    }
    return n;
}

/* Every accessor on every value of a document: nothing may read outside it. */
static void walk(cmj_span v, int depth) {
    char text[48];
    int64_t i;
    (void)cmj_int64(v, &i);
    (void)cmj_string(v, text, sizeof text);
    (void)cmj_string(v, text, 1);
    if (depth > 40) return;
    if (cmj_type(v) == CMJ_ARRAY) {
        size_t cursor = 0;
        cmj_span e;
        int guard = 0;
        while (cmj_next(v, &cursor, &e) && guard++ < 10000) walk(e, depth + 1);
    } else if (cmj_type(v) == CMJ_OBJECT) {
        static const char *keys[] = {"type", "id", "ok", "result", "error", "event", "seq", "kind", "detail", "a"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            cmj_span m;
            if (cmj_get(v, keys[k], &m)) walk(m, depth + 1);
        }
    }
}

static void test_fuzz(void) {
    const char *seed_env = getenv("COINMECH_FUZZ_SEED");
    const char *runs_env = getenv("COINMECH_FUZZ_RUNS");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 10) : 1; /* fixed, as make fuzz-short: CI repeatable */
    long runs = runs_env ? strtol(runs_env, NULL, 10) : 30000;
    rng_state = seed ? seed : 1;
    printf("fuzz: seed %llu, %ld runs (COINMECH_FUZZ_SEED=%llu repeats it)\n", (unsigned long long)seed, runs,
           (unsigned long long)seed);
    fflush(stdout);
    static char buf[8192];
    /* The reader alone, on each exact-size heap copy (so AddressSanitizer sees any overread). */
    for (long r = 0; r < runs; r++) {
        const char *base = corpus[rnd() % (sizeof corpus / sizeof corpus[0])];
        size_t n = strlen(base);
        memcpy(buf, base, n);
        n = mutate(buf, n, sizeof buf);
        char *exact = malloc(n ? n : 1);
        memcpy(exact, buf, n);
        cmj_span doc;
        if (cmj_document(exact, n, &doc) == 0) walk(doc, 0);
        walk((cmj_span){exact, n}, 0); /* unvalidated text too */
        free(exact);
    }
    /* Through a connection: a hello, then a mutated line as the reply or the event. */
    long conn_runs = runs / 10;
    int outcomes[3] = {0, 0, 0};
    for (long r = 0; r < conn_runs; r++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
            perror("socketpair");
            exit(2);
        }
        int events = (int)(rnd() % 2);
        const char *base = corpus[1 + rnd() % (sizeof corpus / sizeof corpus[0] - 1)];
        size_t n = strlen(base);
        memcpy(buf, base, n);
        n = mutate(buf, n, sizeof buf - 1);
        if (rnd() % 4) buf[n++] = '\n';
        const char *hello = rnd() % 8 ? corpus[0] : buf;
        if (hello == corpus[0]) {
            (void)!write(sv[1], hello, strlen(hello));
            (void)!write(sv[1], "\n", 1);
        }
        if (events) {
            static const char sub[] = "{\"id\":1,\"ok\":true,\"result\":{},\"type\":\"reply\"}\n";
            (void)!write(sv[1], sub, sizeof sub - 1);
        }
        if (hello != buf || rnd() % 2) (void)!write(sv[1], buf, n);
        shutdown(sv[1], SHUT_WR);
        coinmech_conn *c = NULL;
        coinmech_options o = {.reply_timeout_ms = 2000, .hello_timeout_ms = 2000};
        char err[128];
        int st = coinmech_connect_fd(sv[0], &o, &c, err, sizeof err);
        if (st == 0) {
            if (events) {
                st = coinmech_subscribe(c, 0);
                coinmech_event e;
                for (int k = 0; st == 0 && k < 4; k++) st = coinmech_next_event(c, &e, 2000);
            } else {
                char out[256];
                coinmech_result res;
                coinmech_balance b[2];
                size_t count;
                switch (rnd() % 3) {
                case 0: st = coinmech_status_json(c, out, sizeof out, NULL); break;
                case 1: st = coinmech_credit(c, b, 2, &count); break;
                default: st = coinmech_spend(c, 5, "A4", "sale-7", &res); break;
                }
            }
            CHECK(st != COINMECH_E_TIMEOUT, "a fuzzed line never leaves a call waiting on a closed stream");
            coinmech_close(c);
        }
        outcomes[st == 0 ? 0 : st == COINMECH_E_PROTOCOL || st == COINMECH_E_NO_HELLO ? 1 : 2]++;
        close(sv[1]);
    }
    printf("fuzz: %ld connections: %d ok, %d protocol errors, %d other errors\n", conn_runs, outcomes[0], outcomes[1], outcomes[2]);
}

/* ==== integration: coinsim and coinmechd ===================================================== */

typedef struct {
    char bin[512];
    char dir[128];
    char socket[256];
    pid_t sim, daemon;
    int daemon_starts;
} rig;

static pid_t spawn(const char *log, char *const argv[]) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, 0);
        execv(argv[0], argv);
        perror(argv[0]);
        _exit(127);
    }
    return pid;
}

static int start_daemon(rig *r) {
    char exe[600], config[200], plugins[600], log[200];
    snprintf(exe, sizeof exe, "%s/coinmechd", r->bin);
    snprintf(config, sizeof config, "%s/coinmechd.yaml", r->dir);
    snprintf(plugins, sizeof plugins, "%s", r->bin);
    snprintf(log, sizeof log, "%s/coinmechd.log", r->dir);
    char *argv[] = {exe, "--config", config, "--plugin-dir", plugins, NULL};
    r->daemon = spawn(log, argv);
    r->daemon_starts++;
    /* Up when it says hello on its socket (10 s at most). */
    int64_t deadline = now_ms() + 15000;
    while (now_ms() < deadline) {
        coinmech_conn *c = NULL;
        if (coinmech_connect(r->socket, &c, NULL, 0) == 0) {
            coinmech_close(c);
            return 0;
        }
        int status;
        if (waitpid(r->daemon, &status, WNOHANG) == r->daemon) {
            r->daemon = 0;
            fprintf(stderr, "coinmechd exited at its start (status %d); see %s\n", status, log);
            return -1;
        }
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "coinmechd did not answer on %s within 15 s\n", r->socket);
    return -1;
}

static int stop_daemon(rig *r) {
    if (r->daemon <= 0) return 0;
    kill(r->daemon, SIGTERM);
    int status = reap(r->daemon, 15000);
    r->daemon = 0;
    return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void print_file(const char *path, int tail_lines) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    static char lines[64][512];
    int n = 0;
    while (fgets(lines[n % 64], sizeof lines[0], f)) n++;
    fclose(f);
    int from = n > tail_lines ? n - tail_lines : 0;
    fprintf(stderr, "---- %s (last %d lines)\n", path, n - from);
    for (int i = from; i < n; i++) fputs(lines[i % 64], stderr);
}

typedef struct {
    rig *r;
    int64_t *seqs;
    char (*kinds)[32];
    int n, cap;
    int coins_since_restart;
    int restarts;
    int refused_once;
    int coins;
    int restart_failed;
} integ_log;

static int integ_event(const coinmech_event *e, void *user) {
    integ_log *log = user;
    if (!log->refused_once && log->restarts == 1 && log->coins_since_restart == 2 && strcmp(e->kind, "coin") == 0) {
        /* The caller goes away before acknowledging: the next watch must give it again. */
        log->refused_once = 1;
        return -2;
    }
    if (log->n == log->cap) return -3;
    log->seqs[log->n] = e->seq;
    snprintf(log->kinds[log->n], sizeof log->kinds[0], "%s", e->kind);
    log->n++;
    if (strcmp(e->kind, "coin") == 0) {
        log->coins++;
        log->coins_since_restart++;
    }
    if (log->coins_since_restart >= 4 && log->restarts < 2) {
        /* The daemon stops and starts again under the watcher. */
        log->coins_since_restart = 0;
        log->restarts++;
        if (stop_daemon(log->r) != 0) fprintf(stderr, "coinmechd did not stop cleanly on SIGTERM\n");
        if (start_daemon(log->r) != 0) {
            log->restart_failed = 1;
            return -4;
        }
        return 0;
    }
    return log->restarts >= 2 && log->coins_since_restart >= 4 ? 1 : 0;
}

/* One page of the events command's result ({"events":[...],"last_seq":N}) after since, into
 * buf: by the library on its own connection, or by coinctl (an independent client). */
typedef int (*page_fn)(void *ctx, int64_t since, char *buf, size_t cap, size_t *len);

static int page_by_library(void *ctx, int64_t since, char *buf, size_t cap, size_t *len) {
    char req[128];
    snprintf(req, sizeof req, "{\"cmd\":\"events\",\"since\":%lld,\"limit\":1000}", (long long)since);
    int st = coinmech_call(ctx, req, buf, cap, len);
    if (st) fprintf(stderr, "events: %s\n", coinmech_last_error(ctx));
    return st;
}

static int page_by_coinctl(void *ctx, int64_t since, char *buf, size_t cap, size_t *len) {
    rig *r = ctx;
    char exe[600], since_text[32], out[200];
    snprintf(exe, sizeof exe, "%s/coinctl", r->bin);
    snprintf(since_text, sizeof since_text, "%lld", (long long)since);
    snprintf(out, sizeof out, "%s/coinctl-events.json", r->dir);
    unlink(out);
    char *argv[] = {exe, "events", "--socket", r->socket, "--since", since_text, "--limit", "1000", "--json", NULL};
    int status = reap(spawn(out, argv), 30000);
    if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "coinctl events failed (status %d)\n", status);
        print_file(out, 5);
        return -1;
    }
    FILE *f = fopen(out, "r");
    if (!f) return -1;
    *len = fread(buf, 1, cap - 1, f);
    fclose(f);
    while (*len && (buf[*len - 1] == '\n')) (*len)--;
    buf[*len] = '\0';
    return 0;
}

/* The ledger's events with seq <= until, as a subscriber without pending sees them: their
 * seqs and kinds, in order; the count, or -1. */
static int ledger_events(page_fn fetch, void *ctx, int64_t until, int64_t *seqs, char (*kinds)[32], int cap) {
    size_t bufcap = COINMECH_MAX_LINE + 1;
    char *buf = malloc(bufcap);
    int n = 0;
    int64_t since = 0;
    while (since < until) {
        size_t len = 0;
        cmj_span doc, list, ev, v;
        if (fetch(ctx, since, buf, bufcap, &len) != 0 || cmj_document(buf, len, &doc) != 0 || !cmj_get(doc, "events", &list)) {
            n = -1;
            break;
        }
        size_t cursor = 0;
        int page = 0;
        while (cmj_next(list, &cursor, &ev)) {
            int64_t seq = 0;
            char kind[32] = "", verdict[16] = "";
            page++;
            if (!cmj_get(ev, "seq", &v) || cmj_int64(v, &seq) != 0 || seq <= since) {
                n = -1;
                break;
            }
            since = seq;
            if (seq > until) break;
            if (cmj_get(ev, "kind", &v)) cmj_string(v, kind, sizeof kind);
            if (cmj_get(ev, "verdict", &v)) cmj_string(v, verdict, sizeof verdict);
            if (strcmp(kind, "decision") == 0 && strcmp(verdict, "accept") == 0) continue; /* pending: not subscribed */
            if (n < cap) {
                seqs[n] = seq;
                snprintf(kinds[n], sizeof kinds[0], "%s", kind);
            }
            n++;
        }
        if (page == 0 || n < 0) break;
    }
    free(buf);
    return n;
}

/* The watch's events must be the ledger's, seq for seq. */
static void compare_with_ledger(const char *who, int n, const int64_t *ledger, char (*ledger_kinds)[32], const integ_log *log) {
    CHECK(n == log->n, "%s: the ledger has %d events up to the last acknowledged, the watch saw %d", who, n, log->n);
    int first_diff = -1;
    for (int i = 0; i < n && i < log->n; i++)
        if (ledger[i] != log->seqs[i] || strcmp(ledger_kinds[i], log->kinds[i]) != 0) {
            first_diff = i;
            break;
        }
    CHECK(first_diff < 0, "%s: event %d: the ledger's %lld %s, the watch's %lld %s", who, first_diff,
          first_diff < 0 ? 0LL : (long long)ledger[first_diff], first_diff < 0 ? "" : ledger_kinds[first_diff],
          first_diff < 0 ? 0LL : (long long)log->seqs[first_diff], first_diff < 0 ? "" : log->kinds[first_diff]);
}

static void integration(void) {
    const char *bin = getenv("COINMECH_BIN_DIR");
    if (!bin || !*bin) {
        const char *require = getenv("COINMECH_REQUIRE_INTEGRATION");
        printf("integration: SKIPPED: COINMECH_BIN_DIR is not set (coinsim, coinmechd, plugins)\n");
        CHECK(!(require && *require == '1'), "COINMECH_REQUIRE_INTEGRATION=1 and no COINMECH_BIN_DIR");
        return;
    }
    rig r;
    memset(&r, 0, sizeof r);
    snprintf(r.bin, sizeof r.bin, "%s", bin);
    snprintf(r.dir, sizeof r.dir, "/tmp/cm-integ-XXXXXX");
    if (!mkdtemp(r.dir)) {
        perror("mkdtemp");
        failures++;
        return;
    }
    snprintf(r.socket, sizeof r.socket, "%s/run/coinmechd.sock", r.dir);
    char path[300];
    snprintf(path, sizeof path, "%s/coinmechd.yaml", r.dir);
    FILE *cfg = fopen(path, "w");
    const char *user = getenv("USER");
    char uname[64] = "root";
    if (getuid() != 0 && user) snprintf(uname, sizeof uname, "%s", user);
    fprintf(cfg,
            "log_level: info\nsource:\n  kind: serial\n  device: mech\n  baud: 9600\n  currencies: [USD]\n"
            "state_dir: state\nruntime_dir: run\ncache_dir: cache\n"
            "socket:\n  path: run/coinmechd.sock\n  mode: \"0660\"\n  control_users: [%s]\n"
            "chain:\n  - plugin: sanity\n  - plugin: weight-floor\n    config: {min_weight_g: 1.5}\n"
            "  - name: usd\n    plugin: coin-table\n    config:\n      currency: USD\n      tolerance: 0.04\n",
            uname);
    fclose(cfg);
    char sim_exe[600], link[200], truth[200], simlog[200];
    snprintf(sim_exe, sizeof sim_exe, "%s/coinsim", bin);
    snprintf(link, sizeof link, "%s/mech", r.dir);
    snprintf(truth, sizeof truth, "%s/truth.json", r.dir);
    snprintf(simlog, sizeof simlog, "%s/coinsim.log", r.dir);
    char *sim_argv[] = {sim_exe, "--scenario", "default", "--rate", "8", "--link", link, "--truth", truth, NULL};
    r.sim = spawn(simlog, sim_argv);
    /* The device link appears when coinsim has its pseudo-terminal. */
    int64_t deadline = now_ms() + 15000;
    struct stat st_link;
    while (lstat(link, &st_link) != 0 && now_ms() < deadline) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK(lstat(link, &st_link) == 0, "coinsim made its device link %s", link);
    int ok = start_daemon(&r) == 0;
    CHECK(ok, "coinmechd started");

    enum { CAP = 4096 };
    static int64_t seen[CAP], ledger[CAP];
    static char seen_kinds[CAP][32], ledger_kinds[CAP][32];
    integ_log log = {.r = &r, .seqs = seen, .kinds = seen_kinds, .cap = CAP};
    int64_t acked = 0; /* from the ledger's start */
    if (ok) {
        coinmech_watch_options o = {.idle_timeout_ms = 30000, .give_up_ms = 30000};
        char err[256] = "";
        int status = 0;
        int64_t t0 = now_ms();
        for (int round = 0; round < 3; round++) {
            status = coinmech_watch(r.socket, &acked, integ_event, &log, &o, err, sizeof err);
            if (status != -2) break; /* -2: the caller stopped once without acknowledging */
        }
        CHECK(status == 0, "the watch ends when its callback says so: %d (%s)", status, err);
        CHECK(!log.restart_failed, "the daemon restarted");
        CHECK(log.restarts == 2 && log.refused_once, "two restarts (%d) and a watcher gone away once", log.restarts);
        printf("integration: %d events watched (%d coins) across %d daemon restarts in %lld ms, acknowledged up to %lld\n", log.n,
               log.coins, log.restarts, (long long)(now_ms() - t0), (long long)acked);

        coinmech_conn *lc = NULL;
        CHECK(coinmech_connect(r.socket, &lc, err, sizeof err) == 0, "a connection for the ledger: %s", err);
        if (lc) {
            compare_with_ledger("events (library)", ledger_events(page_by_library, lc, acked, ledger, ledger_kinds, CAP), ledger,
                                ledger_kinds, &log);
            coinmech_close(lc);
        }
        compare_with_ledger("coinctl events", ledger_events(page_by_coinctl, &r, acked, ledger, ledger_kinds, CAP), ledger,
                            ledger_kinds, &log);
        int starts = 0;
        for (int i = 0; i < log.n; i++) starts += strcmp(seen_kinds[i], "startup") == 0;
        CHECK(starts == 3, "three daemon startups among the events watched, %d", starts);

        /* The credit commands: the coins watched above are credit, so a sale of 1 is approved. */
        coinmech_conn *c = NULL;
        int connected = coinmech_connect(r.socket, &c, err, sizeof err);
        CHECK(connected == 0, "a connection for the credit commands: %s", err);
        if (connected == 0) {
            coinmech_balance b[4];
            size_t count = 0;
            int st = coinmech_credit(c, b, 4, &count);
            CHECK_STATUS(st, 0, c);
            CHECK(count >= 1, "an account");
            int64_t balance = count ? b[0].balance_minor : 0;
            CHECK(balance > 0, "the coins watched are credit: %lld", (long long)balance);
            char id[COINMECH_REQUEST_ID_SIZE];
            coinmech_new_request_id(id);
            coinmech_result res, again;
            st = coinmech_spend(c, 1, "C-test", id, &res);
            CHECK_STATUS(st, 0, c);
            CHECK(st == 0 && res.state == COINMECH_STATE_APPROVED, "a sale of 1 from a credit of %lld approved: %s", (long long)balance,
                  res.state_text);
            if (st == 0 && res.state == COINMECH_STATE_APPROVED) {
                CHECK(res.balance_minor < balance, "the balance falls: %lld -> %lld", (long long)balance, (long long)res.balance_minor);
                st = coinmech_spend(c, 1, "C-test", id, &again);
                CHECK(st == 0 && again.repeated && again.seq == res.seq, "a retry with the same id is the same spend");
                st = coinmech_refund(c, id, &again);
                CHECK(st == 0 && again.state == COINMECH_STATE_REFUNDED, "refunded: %s", coinmech_last_error(c));
            }
            printf("integration: credit %lld, spend %s\n", (long long)balance, res.state_text);
            coinmech_close(c);
        }
    }
    if (failures) {
        char p[300];
        snprintf(p, sizeof p, "%s/coinmechd.log", r.dir);
        print_file(p, 30);
        print_file(simlog, 10);
    }
    int daemon_status = stop_daemon(&r);
    CHECK(daemon_status == 0, "coinmechd stopped on SIGTERM");
    if (r.sim > 0) {
        kill(r.sim, SIGTERM);
        int status = reap(r.sim, 15000);
        CHECK(status >= 0, "coinsim stopped on SIGTERM");
    }
    if (!failures) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", r.dir);
        CHECK(system(cmd) == 0, "removed %s", r.dir);
    } else {
        fprintf(stderr, "integration: kept %s\n", r.dir);
    }
}

/* ==== main =================================================================================== */

int main(int argc, char **argv) {
    int run_integration = 1;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-integration") == 0) run_integration = 0;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    }
    signal(SIGPIPE, SIG_IGN);
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {{"hello", test_hello},
                 {"connect_errors", test_connect_errors},
                 {"bad_replies", test_bad_replies},
                 {"long_and_cut_lines", test_long_and_cut_lines},
                 {"error_replies", test_error_replies},
                 {"reads", test_reads},
                 {"request_too_long", test_request_too_long},
                 {"money", test_money},
                 {"retry_same_id", test_retry_same_id},
                 {"request_ids", test_request_ids},
                 {"events", test_events},
                 {"watch", test_watch},
                 {"fuzz", test_fuzz},
                 {"integration", integration}};
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (only && strcmp(only, tests[i].name) != 0) continue;
        if (!run_integration && tests[i].fn == integration) continue;
        int before = failures;
        int64_t t0 = now_ms();
        tests[i].fn();
        printf("%-20s %s (%lld ms)\n", tests[i].name, failures == before ? "ok" : "FAILED", (long long)(now_ms() - t0));
        fflush(stdout);
    }
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
