/* coinmech_client.c — see coinmech_client.h. */
#define _GNU_SOURCE
#include "coinmech_client.h"

#include "cm_json.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define INITIAL_BUFFER 8192

struct coinmech_conn {
    int fd;
    char *buf;       /* read buffer: [start, len) holds unread bytes */
    size_t cap, start, len, scanned;
    size_t consumed; /* the line handed out last, dropped on the next read */
    int broken;      /* a status that sticks once the stream cannot go on */
    int subscribed;
    int64_t next_id;
    int64_t hello_seq;
    int64_t resume_from;
    int reply_timeout_ms;
    char version[64];
    char last_error[320];
    char daemon_code[32];
};

/* ---- errors ----------------------------------------------------------------------------- */

static void put_message(char *buf, size_t cap, const char *fmt, va_list ap) {
    if (!buf || cap == 0) return;
    vsnprintf(buf, cap, fmt, ap);
}

__attribute__((format(printf, 3, 4))) static int fail(coinmech_conn *c, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    put_message(c->last_error, sizeof c->last_error, fmt, ap);
    va_end(ap);
    c->daemon_code[0] = '\0';
    return status;
}

/* A failure after which the stream is out of step: every later call gets it too. */
__attribute__((format(printf, 3, 4))) static int breaks(coinmech_conn *c, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    put_message(c->last_error, sizeof c->last_error, fmt, ap);
    va_end(ap);
    c->daemon_code[0] = '\0';
    c->broken = status;
    return status;
}

static void set_err(char *err, size_t errlen, const char *text) {
    if (err && errlen) snprintf(err, errlen, "%s", text);
}

const char *coinmech_strerror(int status) {
    switch (status) {
    case 0: return "ok";
    case COINMECH_E_PROTOCOL: return "the daemon sent something that is not the protocol";
    case COINMECH_E_NO_HELLO: return "no hello from the daemon";
    case COINMECH_E_VERSION: return "the daemon speaks another protocol version";
    case COINMECH_E_LINE_TOO_LONG: return "a line from the daemon is too long";
    case COINMECH_E_CLOSED: return "the connection was closed";
    case COINMECH_E_TIMEOUT: return "timed out";
    case COINMECH_E_OVERFLOW: return "the subscriber fell behind (overflow)";
    case COINMECH_E_TRUNCATED: return "the caller's buffer is too small";
    case COINMECH_E_STATE: return "not possible in the connection's state";
    case COINMECH_E_REQUEST_TOO_LONG: return "the request is too long";
    case COINMECH_E_STOPPED: return "stopped";
    case COINMECH_E_BAD_JSON: return "daemon: bad_json";
    case COINMECH_E_BAD_REQUEST: return "daemon: bad_request";
    case COINMECH_E_UNKNOWN_COMMAND: return "daemon: unknown_command";
    case COINMECH_E_REQUEST_LINE_TOO_LONG: return "daemon: line_too_long";
    case COINMECH_E_FORBIDDEN: return "daemon: forbidden";
    case COINMECH_E_UNAVAILABLE: return "daemon: unavailable";
    case COINMECH_E_FAILED: return "daemon: failed";
    case COINMECH_E_DAEMON_OTHER: return "daemon: an error code this library does not know";
    default: return status < 0 && status > -4096 ? strerror(-status) : "unknown status";
    }
}

const char *coinmech_last_error(const coinmech_conn *c) { return c ? c->last_error : "no connection"; }
const char *coinmech_last_daemon_code(const coinmech_conn *c) { return c ? c->daemon_code : ""; }
int64_t coinmech_hello_seq(const coinmech_conn *c) { return c ? c->hello_seq : -1; }
const char *coinmech_hello_version(const coinmech_conn *c) { return c ? c->version : ""; }
int64_t coinmech_resume_from(const coinmech_conn *c) { return c ? c->resume_from : -1; }

void coinmech_set_reply_timeout(coinmech_conn *c, int timeout_ms) {
    if (c) c->reply_timeout_ms = timeout_ms == 0 ? COINMECH_DEFAULT_REPLY_TIMEOUT_MS : timeout_ms;
}

/* ---- time ------------------------------------------------------------------------------- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A deadline from a timeout: -1 for none. */
static int64_t deadline_after(int timeout_ms) { return timeout_ms < 0 ? -1 : now_ms() + timeout_ms; }

static int remaining(int64_t deadline) {
    if (deadline < 0) return -1;
    int64_t left = deadline - now_ms();
    return left <= 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

/* ---- lines -------------------------------------------------------------------------------- */

/* The next line (without its newline) in *line, *n: valid until the next read. */
static int read_line(coinmech_conn *c, int64_t deadline, const char **line, size_t *n) {
    if (c->broken) return c->broken; /* its message stays in last_error */
    c->start += c->consumed;
    c->consumed = 0;
    for (;;) {
        char *nl = c->len > c->scanned ? memchr(c->buf + c->scanned, '\n', c->len - c->scanned) : NULL;
        if (nl) {
            size_t length = (size_t)(nl - (c->buf + c->start));
            if (length > COINMECH_MAX_LINE)
                return breaks(c, COINMECH_E_LINE_TOO_LONG, "a line from the daemon longer than %d bytes", COINMECH_MAX_LINE);
            *line = c->buf + c->start;
            *n = length;
            c->consumed = length + 1;
            c->scanned = c->start + c->consumed;
            return 0;
        }
        c->scanned = c->len;
        if (c->len - c->start > COINMECH_MAX_LINE)
            return breaks(c, COINMECH_E_LINE_TOO_LONG, "a line from the daemon longer than %d bytes", COINMECH_MAX_LINE);
        if (c->start > 0) {
            memmove(c->buf, c->buf + c->start, c->len - c->start);
            c->len -= c->start;
            c->scanned -= c->start;
            c->start = 0;
        }
        if (c->len == c->cap) {
            size_t bigger = c->cap * 2 > COINMECH_MAX_LINE + 1 ? COINMECH_MAX_LINE + 1 : c->cap * 2;
            char *grown = bigger > c->cap ? realloc(c->buf, bigger) : NULL;
            if (!grown) return breaks(c, -ENOMEM, "no memory for a line of %zu bytes", bigger);
            c->buf = grown;
            c->cap = bigger;
        }
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int ready = poll(&p, 1, remaining(deadline));
        if (ready < 0) {
            if (errno == EINTR) continue;
            return breaks(c, -errno, "poll: %s", strerror(errno));
        }
        if (ready == 0) return fail(c, COINMECH_E_TIMEOUT, "no line from the daemon in the time allowed");
        ssize_t got = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            if (errno == ECONNRESET) return breaks(c, COINMECH_E_CLOSED, "the daemon reset the connection");
            return breaks(c, -errno, "recv: %s", strerror(errno));
        }
        if (got == 0) {
            if (c->len > c->start)
                return breaks(c, COINMECH_E_CLOSED, "the daemon closed the connection in the middle of a line (%zu bytes without a newline)",
                              c->len - c->start);
            return breaks(c, COINMECH_E_CLOSED, "the daemon closed the connection");
        }
        c->len += (size_t)got;
    }
}

static int send_line(coinmech_conn *c, const char *text, size_t n, int64_t deadline) {
    size_t sent = 0;
    while (sent < n) {
        ssize_t put = send(c->fd, text + sent, n - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (put >= 0) {
            sent += (size_t)put;
            continue;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            struct pollfd p = {.fd = c->fd, .events = POLLOUT};
            int ready = poll(&p, 1, remaining(deadline));
            if (ready < 0 && errno != EINTR) return breaks(c, -errno, "poll: %s", strerror(errno));
            /* Part of a line may be out: the stream cannot be trusted after this. */
            if (ready == 0) return breaks(c, COINMECH_E_TIMEOUT, "the daemon took no request in the time allowed");
            continue;
        }
        if (errno == EPIPE || errno == ECONNRESET) return breaks(c, COINMECH_E_CLOSED, "the daemon closed the connection");
        return breaks(c, -errno, "send: %s", strerror(errno));
    }
    return 0;
}

/* A line as a JSON object with a string "type"; type gets it. */
static int parse_message(coinmech_conn *c, const char *line, size_t n, cmj_span *msg, char *type, size_t type_cap) {
    cmj_span t;
    if (cmj_document(line, n, msg) != 0 || cmj_type(*msg) != CMJ_OBJECT)
        return breaks(c, COINMECH_E_PROTOCOL, "the daemon sent a line that is not a JSON object (%zu bytes)", n);
    if (!cmj_get(*msg, "type", &t) || cmj_string(t, type, type_cap) != 0)
        return breaks(c, COINMECH_E_PROTOCOL, "the daemon sent an object without a \"type\"");
    return 0;
}

static const struct {
    const char *code;
    int status;
} daemon_codes[] = {
    {"bad_json", COINMECH_E_BAD_JSON},         {"bad_request", COINMECH_E_BAD_REQUEST},
    {"unknown_command", COINMECH_E_UNKNOWN_COMMAND}, {"line_too_long", COINMECH_E_REQUEST_LINE_TOO_LONG},
    {"forbidden", COINMECH_E_FORBIDDEN},       {"unavailable", COINMECH_E_UNAVAILABLE},
    {"failed", COINMECH_E_FAILED},
};

/* An error reply: its code's status, its message in last_error. */
static int error_reply(coinmech_conn *c, cmj_span msg) {
    cmj_span error, v;
    char code[32] = "", message[256] = "";
    if (!cmj_get(msg, "error", &error) || cmj_type(error) != CMJ_OBJECT || !cmj_get(error, "code", &v) ||
        cmj_string(v, code, sizeof code) < 0)
        return breaks(c, COINMECH_E_PROTOCOL, "the daemon sent an error reply without an error code");
    if (cmj_get(error, "message", &v)) (void)cmj_string(v, message, sizeof message);
    int status = COINMECH_E_DAEMON_OTHER;
    for (size_t i = 0; i < sizeof daemon_codes / sizeof daemon_codes[0]; i++)
        if (strcmp(code, daemon_codes[i].code) == 0) status = daemon_codes[i].status;
    snprintf(c->last_error, sizeof c->last_error, "coinmechd: %s: %s", code, message);
    snprintf(c->daemon_code, sizeof c->daemon_code, "%s", code);
    return status;
}

/* Sends the request w (an object missing its closing brace and id) and waits for its reply:
 * 0 and *result (the result object) or an error status. */
static int request(coinmech_conn *c, cmj_writer *w, cmj_span *result) {
    if (c->broken) return c->broken; /* its message stays in last_error */
    if (c->subscribed)
        return fail(c, COINMECH_E_STATE, "this connection is subscribed and carries events only: send commands on another");
    int64_t id = c->next_id++;
    cmj_key(w, "id");
    cmj_int(w, id);
    cmj_raw(w, "}\n", 2);
    if (w->overflow || w->len - 1 > COINMECH_MAX_REQUEST)
        return fail(c, COINMECH_E_REQUEST_TOO_LONG, "the request is longer than the daemon's %d bytes", COINMECH_MAX_REQUEST);
    int64_t deadline = deadline_after(c->reply_timeout_ms);
    int status = send_line(c, w->buf, w->len, deadline);
    if (status) return status;
    for (;;) {
        const char *line;
        size_t n;
        cmj_span msg, v;
        char type[16];
        if ((status = read_line(c, deadline, &line, &n)) != 0) return status;
        if ((status = parse_message(c, line, n, &msg, type, sizeof type)) != 0) return status;
        if (strcmp(type, "reply") != 0) {
            if (strcmp(type, "hello") == 0 || strcmp(type, "event") == 0 || strcmp(type, "overflow") == 0)
                return breaks(c, COINMECH_E_PROTOCOL, "the daemon sent a %s while a reply was awaited", type);
            continue; /* a message type of a later protocol revision */
        }
        int64_t got = 0;
        cmj_span ok;
        if (!cmj_get(msg, "id", &v)) return breaks(c, COINMECH_E_PROTOCOL, "a reply without an id");
        if (!cmj_get(msg, "ok", &ok) || (cmj_type(ok) != CMJ_TRUE && cmj_type(ok) != CMJ_FALSE))
            return breaks(c, COINMECH_E_PROTOCOL, "a reply without ok");
        if (cmj_type(v) == CMJ_NULL) {
            /* The daemon's word on the connection itself (a cut-off): it closes after it. */
            if (cmj_type(ok) == CMJ_TRUE) return breaks(c, COINMECH_E_PROTOCOL, "an ok reply to no request");
            status = error_reply(c, msg);
            c->broken = status;
            return status;
        }
        if (cmj_int64(v, &got) != 0 || got > id)
            return breaks(c, COINMECH_E_PROTOCOL, "a reply to a request never sent");
        if (got < id) continue; /* the late reply to a request that timed out */
        if (cmj_type(ok) == CMJ_FALSE) return error_reply(c, msg);
        if (!cmj_get(msg, "result", result))
            return breaks(c, COINMECH_E_PROTOCOL, "an ok reply without a result");
        c->last_error[0] = '\0';
        c->daemon_code[0] = '\0';
        return 0;
    }
}

/* ---- connecting --------------------------------------------------------------------------- */

static int read_hello(coinmech_conn *c, int timeout_ms) {
    const char *line;
    size_t n;
    cmj_span msg, v;
    char type[16];
    char why[sizeof c->last_error];
    int status = read_line(c, deadline_after(timeout_ms), &line, &n);
    memcpy(why, c->last_error, sizeof why);
    if (status == COINMECH_E_CLOSED) return fail(c, COINMECH_E_NO_HELLO, "no hello: %s", why);
    if (status == COINMECH_E_TIMEOUT) return fail(c, COINMECH_E_NO_HELLO, "no hello within %d ms", timeout_ms);
    if (status) return status;
    if ((status = parse_message(c, line, n, &msg, type, sizeof type)) != 0) {
        memcpy(why, c->last_error, sizeof why);
        return fail(c, COINMECH_E_NO_HELLO, "no hello: %s", why);
    }
    if (strcmp(type, "reply") == 0 && cmj_get(msg, "ok", &v) && cmj_type(v) == CMJ_FALSE)
        return error_reply(c, msg); /* e.g. unavailable: the daemon serves its limit of connections */
    if (strcmp(type, "hello") != 0) return fail(c, COINMECH_E_NO_HELLO, "the first line is a \"%s\", not a hello", type);
    int64_t protocol = -1;
    if (!cmj_get(msg, "protocol", &v) || cmj_int64(v, &protocol) != 0)
        return fail(c, COINMECH_E_NO_HELLO, "a hello without a protocol number");
    if (protocol != COINMECH_PROTOCOL)
        return fail(c, COINMECH_E_VERSION, "the daemon speaks protocol %lld; this library speaks %d", (long long)protocol,
                    COINMECH_PROTOCOL);
    if (!cmj_get(msg, "seq", &v) || cmj_int64(v, &c->hello_seq) != 0 || c->hello_seq < 0)
        return fail(c, COINMECH_E_NO_HELLO, "a hello without a seq");
    if (cmj_get(msg, "version", &v)) (void)cmj_string(v, c->version, sizeof c->version);
    return 0;
}

int coinmech_connect_fd(int fd, const coinmech_options *options, coinmech_conn **out, char *err, size_t errlen) {
    if (!out) {
        set_err(err, errlen, "coinmech_connect: out is NULL");
        if (fd >= 0) close(fd);
        return -EINVAL;
    }
    *out = NULL;
    if (fd < 0) {
        set_err(err, errlen, "coinmech_connect_fd: no descriptor");
        return -EBADF;
    }
    coinmech_conn *c = calloc(1, sizeof *c);
    char *buf = malloc(INITIAL_BUFFER);
    if (!c || !buf) {
        free(c);
        free(buf);
        close(fd);
        set_err(err, errlen, "no memory for a connection");
        return -ENOMEM;
    }
    c->fd = fd;
    c->buf = buf;
    c->cap = INITIAL_BUFFER;
    c->next_id = 1;
    c->hello_seq = -1;
    c->resume_from = -1;
    int hello_ms = COINMECH_DEFAULT_HELLO_TIMEOUT_MS;
    c->reply_timeout_ms = COINMECH_DEFAULT_REPLY_TIMEOUT_MS;
    if (options) {
        if (options->hello_timeout_ms) hello_ms = options->hello_timeout_ms;
        if (options->reply_timeout_ms) c->reply_timeout_ms = options->reply_timeout_ms;
    }
    int status = read_hello(c, hello_ms);
    if (status) {
        set_err(err, errlen, c->last_error);
        coinmech_close(c);
        return status;
    }
    *out = c;
    return 0;
}

int coinmech_connect_ex(const char *path, const coinmech_options *options, coinmech_conn **out, char *err, size_t errlen) {
    if (!out) {
        set_err(err, errlen, "coinmech_connect: out is NULL");
        return -EINVAL;
    }
    *out = NULL;
    if (!path) path = COINMECH_DEFAULT_SOCKET;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        if (err && errlen) snprintf(err, errlen, "socket path longer than %zu bytes: %s", sizeof addr.sun_path - 1, path);
        return -ENAMETOOLONG;
    }
    memcpy(addr.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        if (err && errlen) snprintf(err, errlen, "socket: %s", strerror(e));
        return -e;
    }
    while (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        if (errno == EINTR) continue;
        int e = errno;
        if (err && errlen) snprintf(err, errlen, "cannot connect to %s: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    return coinmech_connect_fd(fd, options, out, err, errlen);
}

int coinmech_connect(const char *path, coinmech_conn **out, char *err, size_t errlen) {
    return coinmech_connect_ex(path, NULL, out, err, errlen);
}

void coinmech_close(coinmech_conn *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    free(c->buf);
    free(c);
}

/* ---- events ------------------------------------------------------------------------------- */

int coinmech_subscribe_ex(coinmech_conn *c, int64_t since, int flags) {
    if (!c) return -EINVAL;
    if (since < 0 && since != COINMECH_SINCE_NOW) return fail(c, -EINVAL, "since must be a seq (>= 0) or COINMECH_SINCE_NOW");
    char buf[256];
    cmj_writer w;
    cmj_init(&w, buf, sizeof buf);
    cmj_raw(&w, "{\"cmd\":\"subscribe\"", 18);
    if (since >= 0) {
        cmj_key(&w, "since");
        cmj_int(&w, since);
    }
    if (flags & COINMECH_SUBSCRIBE_PENDING) cmj_raw(&w, ",\"pending\":true", 15);
    cmj_span result;
    int status = request(c, &w, &result);
    if (status) return status;
    c->subscribed = 1;
    return 0;
}

int coinmech_subscribe(coinmech_conn *c, int64_t since) { return coinmech_subscribe_ex(c, since, 0); }

static int text_field(cmj_span object, const char *key, char *buf, size_t cap, int *truncated) {
    cmj_span v;
    buf[0] = '\0';
    if (!cmj_get(object, key, &v) || cmj_type(v) == CMJ_NULL) return 0;
    int r = cmj_string(v, buf, cap);
    if (r > 0) *truncated = 1;
    return r < 0 ? -1 : 0;
}

static int int_field(cmj_span object, const char *key, int64_t *out, int *has) {
    cmj_span v;
    if (has) *has = 0;
    if (!cmj_get(object, key, &v) || cmj_type(v) == CMJ_NULL) return 0;
    if (cmj_int64(v, out) != 0) return -1;
    if (has) *has = 1;
    return 0;
}

static int fill_event(coinmech_conn *c, cmj_span msg, coinmech_event *e) {
    cmj_span body, detail;
    memset(e, 0, sizeof *e);
    int t = 0;
    if (int_field(msg, "seq", &e->seq, &t) != 0 || !t || e->seq < 1)
        return breaks(c, COINMECH_E_PROTOCOL, "an event without a seq");
    if (!cmj_get(msg, "event", &body) || cmj_type(body) != CMJ_OBJECT)
        return breaks(c, COINMECH_E_PROTOCOL, "event %lld without its object", (long long)e->seq);
    if (text_field(body, "kind", e->kind, sizeof e->kind, &e->truncated) != 0 || !e->kind[0])
        return breaks(c, COINMECH_E_PROTOCOL, "event %lld without a kind", (long long)e->seq);
    if (text_field(body, "source", e->source, sizeof e->source, &e->truncated) ||
        text_field(body, "currency", e->currency, sizeof e->currency, &e->truncated) ||
        text_field(body, "denomination", e->denomination, sizeof e->denomination, &e->truncated) ||
        text_field(body, "verdict", e->verdict, sizeof e->verdict, &e->truncated) ||
        text_field(body, "reason", e->reason, sizeof e->reason, &e->truncated) ||
        int_field(body, "value_minor", &e->value_minor, &e->has_value_minor))
        return breaks(c, COINMECH_E_PROTOCOL, "event %lld has a field of the wrong type", (long long)e->seq);
    if (cmj_get(body, "detail", &detail) && cmj_type(detail) == CMJ_OBJECT) {
        /* Operator events' details are strings ("balance_minor":"25"); a number is read too. */
        cmj_span v;
        char digits[24];
        if (cmj_get(detail, "balance_minor", &v)) {
            if (cmj_type(v) == CMJ_STRING && cmj_string(v, digits, sizeof digits) == 0) {
                v.p = digits;
                v.n = strlen(digits);
            }
            if (cmj_int64(v, &e->balance_minor) == 0) e->has_balance_minor = 1;
        }
        if (cmj_get(detail, "request_id", &v) && cmj_string(v, e->request_id, sizeof e->request_id) > 0) e->truncated = 1;
    }
    if (!e->has_balance_minor && int_field(body, "balance_minor", &e->balance_minor, &e->has_balance_minor) != 0)
        return breaks(c, COINMECH_E_PROTOCOL, "event %lld has a balance that is not a whole number", (long long)e->seq);
    e->json = body.p;
    e->json_len = body.n;
    return 0;
}

int coinmech_next_event(coinmech_conn *c, coinmech_event *e, int timeout_ms) {
    if (!c || !e) return -EINVAL;
    if (!c->subscribed && !c->broken) return fail(c, COINMECH_E_STATE, "not subscribed: call coinmech_subscribe first");
    int64_t deadline = deadline_after(timeout_ms);
    for (;;) {
        const char *line;
        size_t n;
        cmj_span msg, v;
        char type[16];
        int status = read_line(c, deadline, &line, &n);
        if (status) return status;
        if ((status = parse_message(c, line, n, &msg, type, sizeof type)) != 0) return status;
        if (strcmp(type, "event") == 0) return fill_event(c, msg, e);
        if (strcmp(type, "overflow") == 0) {
            if (!cmj_get(msg, "resume_from", &v) || cmj_int64(v, &c->resume_from) != 0 || c->resume_from < 0)
                return breaks(c, COINMECH_E_PROTOCOL, "an overflow without resume_from");
            return breaks(c, COINMECH_E_OVERFLOW, "the daemon dropped this subscriber (it fell behind): resume from %lld",
                          (long long)c->resume_from);
        }
        if (strcmp(type, "reply") == 0) {
            if (cmj_get(msg, "ok", &v) && cmj_type(v) == CMJ_FALSE) {
                status = error_reply(c, msg);
                c->broken = status; /* a cut-off: the daemon closes after it */
                return status;
            }
            continue; /* a late reply */
        }
        if (strcmp(type, "hello") == 0) return breaks(c, COINMECH_E_PROTOCOL, "a second hello");
        /* Another type of a later revision: skipped. */
    }
}

/* ---- watch -------------------------------------------------------------------------------- */

static int fatal_for_watch(int status) {
    return status == COINMECH_E_VERSION || status == COINMECH_E_FORBIDDEN || status == COINMECH_E_BAD_REQUEST ||
           status == COINMECH_E_UNKNOWN_COMMAND || status == -EACCES || status == -EINVAL || status == -ENAMETOOLONG ||
           status == -ENOMEM;
}

static void nap(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

int coinmech_watch(const char *path, int64_t *acked, coinmech_event_fn callback, void *user,
                   const coinmech_watch_options *options, char *err, size_t errlen) {
    static const coinmech_watch_options defaults = {0};
    if (!options) options = &defaults;
    if (!acked || !callback || (*acked < 0 && *acked != COINMECH_SINCE_NOW)) {
        set_err(err, errlen, "coinmech_watch: acked_seq and callback are required; *acked_seq >= 0 or COINMECH_SINCE_NOW");
        return -EINVAL;
    }
    int backoff = 50;
    int64_t lost_since = -1;
    int64_t last_event = now_ms();
    char message[320] = "";
    for (;;) {
        if (options->stop && *options->stop) {
            set_err(err, errlen, "stopped");
            return COINMECH_E_STOPPED;
        }
        coinmech_conn *c = NULL;
        int status = coinmech_connect(path, &c, message, sizeof message);
        if (status == 0) {
            if (*acked == COINMECH_SINCE_NOW) *acked = c->hello_seq;
            status = coinmech_subscribe_ex(c, *acked, options->flags);
            if (status == 0) {
                backoff = 50;
                lost_since = -1;
            }
            while (status == 0) {
                if (options->stop && *options->stop) {
                    coinmech_close(c);
                    set_err(err, errlen, "stopped");
                    return COINMECH_E_STOPPED;
                }
                int wait = 200;
                if (options->idle_timeout_ms > 0) {
                    int64_t left = last_event + options->idle_timeout_ms - now_ms();
                    if (left <= 0) {
                        coinmech_close(c);
                        if (err && errlen) snprintf(err, errlen, "no event within %d ms", options->idle_timeout_ms);
                        return COINMECH_E_TIMEOUT;
                    }
                    if (left < wait) wait = (int)left;
                }
                coinmech_event e;
                status = coinmech_next_event(c, &e, wait);
                if (status == COINMECH_E_TIMEOUT) {
                    status = 0;
                    continue;
                }
                if (status) break;
                last_event = now_ms();
                if (e.seq <= *acked) continue; /* already acknowledged: never twice */
                int verdict = callback(&e, user);
                if (verdict < 0) {
                    coinmech_close(c);
                    if (err && errlen) snprintf(err, errlen, "the callback stopped at seq %lld (not acknowledged)", (long long)e.seq);
                    return verdict;
                }
                *acked = e.seq;
                if (verdict > 0) {
                    coinmech_close(c);
                    set_err(err, errlen, "");
                    return 0;
                }
            }
            /* After an overflow too, since = *acked loses nothing: the daemon's resume_from is
             * never below what it delivered, and nothing past *acked was acknowledged. */
            snprintf(message, sizeof message, "%s", c->last_error);
            coinmech_close(c);
        }
        if (fatal_for_watch(status)) {
            set_err(err, errlen, message);
            return status;
        }
        if (options->on_disconnect) options->on_disconnect(status, message, user);
        int64_t t = now_ms();
        if (lost_since < 0) lost_since = t;
        if (options->give_up_ms > 0 && t - lost_since >= options->give_up_ms) {
            set_err(err, errlen, message);
            return status;
        }
        /* Back off before the next attempt: the daemon is restarting or away. */
        for (int slept = 0; slept < backoff; slept += 50) {
            if (options->stop && *options->stop) break;
            nap(50);
        }
        backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
    }
}

/* ---- reads -------------------------------------------------------------------------------- */

static int copy_result(coinmech_conn *c, cmj_span result, char *buf, size_t cap, size_t *len) {
    if (len) *len = result.n;
    if (!buf || cap < result.n + 1) {
        if (buf && cap) buf[0] = '\0';
        return fail(c, COINMECH_E_TRUNCATED, "the result is %zu bytes: the buffer needs %zu", result.n, result.n + 1);
    }
    memcpy(buf, result.p, result.n);
    buf[result.n] = '\0';
    return 0;
}

int coinmech_status_json(coinmech_conn *c, char *buf, size_t cap, size_t *len) {
    if (!c) return -EINVAL;
    char req[64];
    cmj_writer w;
    cmj_span result;
    cmj_init(&w, req, sizeof req);
    cmj_raw(&w, "{\"cmd\":\"status\"", 15);
    int status = request(c, &w, &result);
    return status ? status : copy_result(c, result, buf, cap, len);
}

int coinmech_call(coinmech_conn *c, const char *request_json, char *buf, size_t cap, size_t *len) {
    if (!c || !request_json) return -EINVAL;
    size_t n = strlen(request_json);
    cmj_span doc, v;
    if (cmj_document(request_json, n, &doc) != 0 || cmj_type(doc) != CMJ_OBJECT)
        return fail(c, -EINVAL, "the request is not one JSON object");
    if (cmj_get(doc, "id", &v)) return fail(c, -EINVAL, "the request has an \"id\": the library sets it");
    if (n > COINMECH_MAX_REQUEST)
        return fail(c, COINMECH_E_REQUEST_TOO_LONG, "the request is longer than the daemon's %d bytes", COINMECH_MAX_REQUEST);
    char req[COINMECH_MAX_REQUEST + 64];
    cmj_writer w;
    cmj_span result;
    cmj_init(&w, req, sizeof req);
    /* Everything up to the closing brace; request() adds ,"id":N}. */
    const char *close = doc.p + doc.n - 1;
    cmj_raw(&w, doc.p, (size_t)(close - doc.p));
    while (w.len > 0 && (w.buf[w.len - 1] == ' ' || w.buf[w.len - 1] == '\n' || w.buf[w.len - 1] == '\t' ||
                         w.buf[w.len - 1] == '\r'))
        w.buf[--w.len] = '\0';
    int status = request(c, &w, &result);
    return status ? status : copy_result(c, result, buf, cap, len);
}

int coinmech_credit(coinmech_conn *c, coinmech_balance *balances, size_t cap, size_t *count) {
    if (!c || (!balances && cap)) return -EINVAL;
    if (count) *count = 0;
    char req[64];
    cmj_writer w;
    cmj_span result, accounts, row;
    cmj_init(&w, req, sizeof req);
    cmj_raw(&w, "{\"cmd\":\"credit\"", 15);
    int status = request(c, &w, &result);
    if (status) return status;
    char source[64] = "";
    int truncated = 0;
    if (cmj_type(result) != CMJ_OBJECT || text_field(result, "source", source, sizeof source, &truncated) ||
        !cmj_get(result, "accounts", &accounts) || cmj_type(accounts) != CMJ_ARRAY)
        return fail(c, COINMECH_E_PROTOCOL, "a credit reply without accounts");
    size_t cursor = 0, total = 0;
    while (cmj_next(accounts, &cursor, &row)) {
        coinmech_balance b;
        int has_balance = 0;
        memset(&b, 0, sizeof b);
        memcpy(b.source, source, sizeof b.source);
        b.moved_seq = -1;
        if (cmj_type(row) != CMJ_OBJECT || text_field(row, "account", b.account, sizeof b.account, &truncated) ||
            text_field(row, "currency", b.currency, sizeof b.currency, &truncated) ||
            int_field(row, "balance_minor", &b.balance_minor, &has_balance) || !has_balance ||
            int_field(row, "moved_seq", &b.moved_seq, NULL))
            return fail(c, COINMECH_E_PROTOCOL, "a credit account without a whole balance_minor");
        if (total < cap) balances[total] = b;
        total++;
    }
    if (count) *count = total;
    if (total > cap) return fail(c, COINMECH_E_TRUNCATED, "%zu accounts; room for %zu", total, cap);
    return 0;
}

/* ---- money -------------------------------------------------------------------------------- */

int coinmech_new_request_id(char buf[COINMECH_REQUEST_ID_SIZE]) {
    unsigned char r[16];
    size_t got = 0;
    if (!buf) return -EINVAL;
    buf[0] = '\0';
    while (got < sizeof r) {
        ssize_t n = getrandom(r + got, sizeof r - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        got += (size_t)n;
    }
    r[6] = (unsigned char)((r[6] & 0x0F) | 0x40); /* version 4 */
    r[8] = (unsigned char)((r[8] & 0x3F) | 0x80); /* variant 10 */
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < sizeof r; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) buf[o++] = '-';
        buf[o++] = hex[r[i] >> 4];
        buf[o++] = hex[r[i] & 15];
    }
    buf[o] = '\0';
    return 0;
}

static int check_request_id(coinmech_conn *c, const char *id) {
    size_t n = id ? strlen(id) : 0;
    if (n < 1 || n > 64) return fail(c, -EINVAL, "a request id is 1 to 64 characters");
    for (size_t i = 0; i < n; i++) {
        char ch = id[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '.' || ch == '_' ||
              ch == ':' || ch == '-'))
            return fail(c, -EINVAL, "a request id is made of A-Z a-z 0-9 . _ : - only");
    }
    return 0;
}

static int money_reply(coinmech_conn *c, cmj_span result, coinmech_result *r) {
    cmj_span v, payout;
    int t = 0;
    memset(r, 0, sizeof *r);
    r->amount_minor = r->balance_minor = r->kept_minor = r->seq = -1;
    r->paid_minor = r->debt_minor = -1;
    if (cmj_type(result) != CMJ_OBJECT ||
        text_field(result, "state", r->state_text, sizeof r->state_text, &r->truncated) || !r->state_text[0])
        return fail(c, COINMECH_E_PROTOCOL, "a reply without a state");
    static const struct {
        const char *text;
        int state;
    } states[] = {{"approved", COINMECH_STATE_APPROVED}, {"refused", COINMECH_STATE_REFUSED},
                  {"refunded", COINMECH_STATE_REFUNDED}, {"returned", COINMECH_STATE_RETURNED},
                  {"kept", COINMECH_STATE_KEPT}};
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
        if (strcmp(r->state_text, states[i].text) == 0) r->state = states[i].state;
    if (text_field(result, "reason", r->reason, sizeof r->reason, &r->truncated) ||
        text_field(result, "request_id", r->request_id, sizeof r->request_id, &r->truncated) ||
        text_field(result, "currency", r->currency, sizeof r->currency, &r->truncated) ||
        text_field(result, "item", r->item, sizeof r->item, &r->truncated) ||
        int_field(result, "amount_minor", &r->amount_minor, NULL) ||
        int_field(result, "balance_minor", &r->balance_minor, NULL) ||
        int_field(result, "kept_minor", &r->kept_minor, NULL) || int_field(result, "seq", &r->seq, NULL))
        return fail(c, COINMECH_E_PROTOCOL, "a %s reply with a field of the wrong type", r->state_text);
    if (cmj_get(result, "repeated", &v)) {
        if (cmj_type(v) != CMJ_TRUE && cmj_type(v) != CMJ_FALSE)
            return fail(c, COINMECH_E_PROTOCOL, "a reply whose repeated is not true or false");
        r->repeated = cmj_type(v) == CMJ_TRUE;
    }
    if (cmj_get(result, "payout", &payout) && cmj_type(payout) == CMJ_OBJECT) {
        r->has_payout = 1;
        if (text_field(payout, "state", r->payout_state, sizeof r->payout_state, &r->truncated) ||
            int_field(payout, "paid_minor", &r->paid_minor, &t) || int_field(payout, "debt_minor", &r->debt_minor, &t))
            return fail(c, COINMECH_E_PROTOCOL, "a payout with a field of the wrong type");
    }
    return 0;
}

int coinmech_spend_currency(coinmech_conn *c, int64_t amount_minor, const char *currency, const char *item,
                            const char *request_id, coinmech_result *result) {
    if (!c || !result) return -EINVAL;
    int status = check_request_id(c, request_id);
    if (status) return status;
    if (amount_minor < 1) return fail(c, -EINVAL, "an amount is a whole number of minor units, at least 1");
    if (item) {
        size_t n = strlen(item);
        if (n < 1 || n > 64) return fail(c, -EINVAL, "an item is 1 to 64 bytes");
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)item[i] < 0x20 || item[i] == 0x7F) return fail(c, -EINVAL, "an item holds no control characters");
    }
    if (currency && (strlen(currency) != 3 || currency[0] < 'A' || currency[0] > 'Z' || currency[1] < 'A' ||
                     currency[1] > 'Z' || currency[2] < 'A' || currency[2] > 'Z'))
        return fail(c, -EINVAL, "a currency is a 3-letter ISO 4217 code such as USD");
    char req[512];
    cmj_writer w;
    cmj_span reply;
    cmj_init(&w, req, sizeof req);
    cmj_raw(&w, "{\"cmd\":\"spend\"", 14);
    cmj_key(&w, "amount_minor");
    cmj_int(&w, amount_minor);
    cmj_key(&w, "request_id");
    cmj_str(&w, request_id);
    if (item) {
        cmj_key(&w, "item");
        cmj_str(&w, item);
    }
    if (currency) {
        cmj_key(&w, "currency");
        cmj_str(&w, currency);
    }
    if ((status = request(c, &w, &reply)) != 0) return status;
    return money_reply(c, reply, result);
}

int coinmech_spend(coinmech_conn *c, int64_t amount_minor, const char *item, const char *request_id, coinmech_result *result) {
    return coinmech_spend_currency(c, amount_minor, NULL, item, request_id, result);
}

static int by_request_id(coinmech_conn *c, const char *cmd, const char *request_id, coinmech_result *result) {
    if (!c || !result) return -EINVAL;
    int status = check_request_id(c, request_id);
    if (status) return status;
    char req[256];
    cmj_writer w;
    cmj_span reply;
    cmj_init(&w, req, sizeof req);
    cmj_raw(&w, "{", 1);
    cmj_key(&w, "cmd");
    cmj_str(&w, cmd);
    cmj_key(&w, "request_id");
    cmj_str(&w, request_id);
    if ((status = request(c, &w, &reply)) != 0) return status;
    return money_reply(c, reply, result);
}

int coinmech_refund(coinmech_conn *c, const char *request_id, coinmech_result *result) {
    return by_request_id(c, "refund", request_id, result);
}

int coinmech_cancel(coinmech_conn *c, const char *request_id, coinmech_result *result) {
    return by_request_id(c, "cancel", request_id, result);
}
