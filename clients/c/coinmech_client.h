/* coinmech_client.h — a C11 client of coinmechd's socket (docs/PROTOCOL.md, part one;
 * protocol 2). libc only. Link with -lcoinmech-client (soname libcoinmech-client.so.1).
 *
 * Statuses: every call returns an int: 0 for success, a negative errno (-ENOENT,
 * -ECONNREFUSED, -EACCES, -EINVAL, -ENOMEM, ...) for a system or argument error, or a
 * COINMECH_E_* code (below; all <= -1000). coinmech_strerror() names any of them.
 *
 * Error messages: a call on a connection leaves its message in the connection
 * (coinmech_last_error(), owned by the connection, valid until the next call on it). The
 * calls that have no connection yet (coinmech_connect*, coinmech_watch) write theirs into a
 * buffer the caller passes (err, errlen; NULL/0 for none), always NUL-terminated, truncated
 * to fit.
 *
 * Memory: the library allocates only the connection (coinmech_connect*) and its read
 * buffer, which grows with the longest line read, up to COINMECH_MAX_LINE + 1 bytes; both
 * are freed by coinmech_close(), and by nothing else. Results are copied into structs or
 * buffers the caller owns. The pointers a result carries into the connection (event.json,
 * coinmech_hello_version()) are valid until the next call on that connection.
 *
 * Threads: no global state. A connection is used by one thread at a time.
 *
 * Lines: a request is at most COINMECH_MAX_REQUEST bytes (the daemon's cap; a longer one
 * is refused before it is sent); a line from the daemon at most COINMECH_MAX_LINE (a longer
 * one breaks the connection with COINMECH_E_LINE_TOO_LONG).
 */
#ifndef COINMECH_CLIENT_H
#define COINMECH_CLIENT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define COINMECH_API __attribute__((visibility("default")))
#else
#define COINMECH_API
#endif

#define COINMECH_PROTOCOL 2
#define COINMECH_DEFAULT_SOCKET "/run/coinmech/coinmechd.sock"
#define COINMECH_MAX_REQUEST 4096           /* bytes of a request line, newline excluded */
#define COINMECH_MAX_LINE (1024 * 1024)     /* bytes of a line from the daemon, newline excluded */
#define COINMECH_REQUEST_ID_SIZE 37         /* a UUID (36 characters) and its NUL */
#define COINMECH_DEFAULT_REPLY_TIMEOUT_MS 35000 /* a cancel's payout may take 30 s */
#define COINMECH_DEFAULT_HELLO_TIMEOUT_MS 5000

enum {
    /* Something the daemon (or whatever answers) sent. */
    COINMECH_E_PROTOCOL = -1000,     /* not JSON, not an object, or not the protocol's shape */
    COINMECH_E_NO_HELLO = -1001,     /* the first line was not a hello */
    COINMECH_E_VERSION = -1002,      /* the hello's protocol is not 2 */
    COINMECH_E_LINE_TOO_LONG = -1003,/* a line longer than COINMECH_MAX_LINE */
    COINMECH_E_CLOSED = -1004,       /* the daemon closed the connection (maybe mid-line) */
    COINMECH_E_TIMEOUT = -1005,      /* nothing within the time allowed (connection still usable) */
    COINMECH_E_OVERFLOW = -1006,     /* the subscriber fell behind: coinmech_resume_from() */
    /* The caller's side. */
    COINMECH_E_TRUNCATED = -1010,    /* a caller's buffer or array is too small (size given) */
    COINMECH_E_STATE = -1011,        /* wrong call for the connection's state (see message) */
    COINMECH_E_REQUEST_TOO_LONG = -1012, /* the request would pass COINMECH_MAX_REQUEST */
    COINMECH_E_STOPPED = -1013,      /* coinmech_watch: the stop flag was raised */
    /* The daemon's error replies ({"ok":false,"error":{"code":...}}). */
    COINMECH_E_BAD_JSON = -1020,
    COINMECH_E_BAD_REQUEST = -1021,
    COINMECH_E_UNKNOWN_COMMAND = -1022,
    COINMECH_E_REQUEST_LINE_TOO_LONG = -1023, /* the daemon's line_too_long */
    COINMECH_E_FORBIDDEN = -1024,
    COINMECH_E_UNAVAILABLE = -1025,
    COINMECH_E_FAILED = -1026,
    COINMECH_E_DAEMON_OTHER = -1027  /* an error code this library does not know */
};

typedef struct coinmech_conn coinmech_conn;

typedef struct {
    int reply_timeout_ms; /* per command; 0: COINMECH_DEFAULT_REPLY_TIMEOUT_MS, <0: none */
    int hello_timeout_ms; /* 0: COINMECH_DEFAULT_HELLO_TIMEOUT_MS, <0: none */
} coinmech_options;

/* Connects to the socket at path (NULL: COINMECH_DEFAULT_SOCKET) and reads the hello.
 * On success *out is a connection the caller frees with coinmech_close(); on failure *out
 * is NULL and err says why (COINMECH_E_VERSION for a daemon speaking another protocol,
 * COINMECH_E_UNAVAILABLE when it is at its connection limit, COINMECH_E_NO_HELLO, ...). */
COINMECH_API int coinmech_connect(const char *path, coinmech_conn **out, char *err, size_t errlen);
COINMECH_API int coinmech_connect_ex(const char *path, const coinmech_options *options,
                                     coinmech_conn **out, char *err, size_t errlen);
/* The same on a connected stream socket the caller made; the connection owns fd from then
 * on (coinmech_close closes it; so does a failure here). */
COINMECH_API int coinmech_connect_fd(int fd, const coinmech_options *options,
                                     coinmech_conn **out, char *err, size_t errlen);
/* Closes the socket and frees the connection. NULL is allowed. */
COINMECH_API void coinmech_close(coinmech_conn *conn);

COINMECH_API const char *coinmech_last_error(const coinmech_conn *conn);
/* The daemon's error code of the last error reply ("forbidden", ...), "" for other errors. */
COINMECH_API const char *coinmech_last_daemon_code(const coinmech_conn *conn);
COINMECH_API const char *coinmech_strerror(int status);
COINMECH_API int64_t coinmech_hello_seq(const coinmech_conn *conn);   /* hello.seq */
COINMECH_API const char *coinmech_hello_version(const coinmech_conn *conn);
COINMECH_API void coinmech_set_reply_timeout(coinmech_conn *conn, int timeout_ms);

/* ---- Events ---------------------------------------------------------------------------- */

#define COINMECH_SINCE_NOW (-1) /* subscribe: only events recorded from now on */
#define COINMECH_SUBSCRIBE_PENDING 1 /* also accepted decisions (coins not yet money) */

/* Subscribes from since_seq (every event with seq > since_seq, then live ones; no gap and no
 * duplicate at the seam). A subscribed connection carries events only: commands on it are
 * COINMECH_E_STATE; use a second connection for them. */
COINMECH_API int coinmech_subscribe(coinmech_conn *conn, int64_t since_seq);
COINMECH_API int coinmech_subscribe_ex(coinmech_conn *conn, int64_t since_seq, int flags);

typedef struct {
    int64_t seq;
    char kind[32];          /* "coin" (money), "decision", "coin_returned", "credit_spent", ... */
    char source[64];
    char currency[8];       /* "" when absent */
    char denomination[32];  /* "" when absent */
    char verdict[16];       /* decisions: "accept"/"reject"; "" when absent */
    char reason[64];        /* "" when absent */
    char request_id[65];    /* credit events' detail.request_id; "" when absent */
    int has_value_minor;
    int64_t value_minor;    /* a coin's value, or the amount a credit event moved */
    int has_balance_minor;
    int64_t balance_minor;  /* credit events: detail.balance_minor, the balance after */
    int truncated;          /* some text field was longer than its array: cut to fit */
    const char *json;       /* the event object as sent, json_len bytes, not NUL-terminated; */
    size_t json_len;        /* valid until the next call on the connection */
} coinmech_event;

/* Waits up to timeout_ms (<0: forever; 0: only what is already here) for the next event.
 * COINMECH_E_TIMEOUT when none came (the connection stays usable); COINMECH_E_OVERFLOW
 * when the daemon dropped this subscriber (coinmech_resume_from() is where to resume; the
 * connection is done); COINMECH_E_CLOSED at the end of the stream. */
COINMECH_API int coinmech_next_event(coinmech_conn *conn, coinmech_event *event, int timeout_ms);
COINMECH_API int64_t coinmech_resume_from(const coinmech_conn *conn); /* -1: no overflow */

/* coinmech_watch: follows the event stream across disconnects, daemon restarts and
 * overflows, and delivers every event once.
 *
 * *acked_seq is the last seq the caller has acknowledged (COINMECH_SINCE_NOW to start with
 * the events recorded from the first connection on). The callback's return acknowledges:
 *   0   acknowledged (*acked_seq = event->seq), go on;
 *   1   acknowledged, then return 0;
 *   <0  not acknowledged, return that value (the event comes again on the next watch).
 * After any loss of the connection it connects again (backing off 50 ms to 2 s) and
 * subscribes with since = *acked_seq: no event lost, none repeated (an event at or below
 * *acked_seq is never delivered). Keep *acked_seq (e.g. on disk) to resume across runs.
 *
 * It returns without retrying on what a reconnect cannot fix: COINMECH_E_VERSION,
 * COINMECH_E_FORBIDDEN, COINMECH_E_BAD_REQUEST, -EACCES; and COINMECH_E_TIMEOUT after
 * idle_timeout_ms without an event, COINMECH_E_STOPPED when *stop becomes non-zero, or
 * the last connection error after give_up_ms without a connection. */
typedef int (*coinmech_event_fn)(const coinmech_event *event, void *user);
typedef struct {
    int idle_timeout_ms;   /* 0: wait forever */
    int give_up_ms;        /* 0: keep reconnecting forever */
    int flags;             /* COINMECH_SUBSCRIBE_PENDING */
    volatile sig_atomic_t *stop; /* NULL: none; checked at least every 200 ms */
    /* Told of each lost connection (status, message) before the reconnect; NULL: silent. */
    void (*on_disconnect)(int status, const char *message, void *user);
} coinmech_watch_options;

COINMECH_API int coinmech_watch(const char *path, int64_t *acked_seq, coinmech_event_fn callback,
                                void *user, const coinmech_watch_options *options,
                                char *err, size_t errlen);

/* ---- Reads ----------------------------------------------------------------------------- */

/* The status command's result object, as the daemon wrote it, into buf (NUL-terminated).
 * *len (may be NULL) gets its length; COINMECH_E_TRUNCATED when buf needs *len + 1 bytes. */
COINMECH_API int coinmech_status_json(coinmech_conn *conn, char *buf, size_t cap, size_t *len);

/* Any request: request_json is one JSON object without "id" (the library adds its own);
 * the reply's result object goes to buf as coinmech_status_json's does. */
COINMECH_API int coinmech_call(coinmech_conn *conn, const char *request_json,
                               char *buf, size_t cap, size_t *len);

typedef struct {
    char source[64];
    char account[64];
    char currency[8];
    int64_t balance_minor;
    int64_t moved_seq;
} coinmech_balance;

/* The customer's credit, one balance per account (currency). *count gets the number of
 * accounts the daemon listed; the first min(cap, *count) are written to balances, and
 * COINMECH_E_TRUNCATED is returned when *count > cap. */
COINMECH_API int coinmech_credit(coinmech_conn *conn, coinmech_balance *balances, size_t cap,
                                 size_t *count);

/* ---- Money: spend, refund, cancel -------------------------------------------------------
 * Each names its action by a request id (1-64 of A-Z a-z 0-9 . _ : -). A retry, after a
 * timeout, a lost connection or a daemon restart, must reuse the same id: the daemon answers
 * a repeat from its ledger ("repeated": 1) and never moves the money twice. A new id is a
 * new action. */

enum {
    COINMECH_STATE_UNKNOWN = 0, /* a state this library does not know: see state_text */
    COINMECH_STATE_APPROVED,    /* spend: the credit was lowered */
    COINMECH_STATE_REFUSED,     /* spend: credit short (reason); nothing recorded */
    COINMECH_STATE_REFUNDED,    /* refund */
    COINMECH_STATE_RETURNED,    /* cancel: the credit paid back as change (payout_*) */
    COINMECH_STATE_KEPT         /* cancel: nothing paid, the credit stays (reason) */
};

typedef struct {
    int state;
    char state_text[16];
    char reason[160];
    char request_id[65];
    char currency[8];
    char item[65];
    int64_t amount_minor;  /* -1 when absent */
    int64_t balance_minor; /* -1 when absent */
    int64_t kept_minor;    /* cancel; -1 when absent */
    int64_t seq;           /* the ledger's event; -1 when absent */
    int repeated;          /* 1: answered from the ledger, a repeat of this request id */
    int has_payout;        /* cancel: the payout's outcome */
    char payout_state[16]; /* "done", "partial", "open" */
    int64_t paid_minor;
    int64_t debt_minor;
    int truncated;         /* some text was longer than its array: cut to fit */
} coinmech_result;

/* Writes a new random request id (a version 4 UUID, from getrandom) into buf. */
COINMECH_API int coinmech_new_request_id(char buf[COINMECH_REQUEST_ID_SIZE]);

/* item: NULL or 1-64 bytes without control characters. A credit-short refusal is a success
 * (0) with result->state COINMECH_STATE_REFUSED. */
COINMECH_API int coinmech_spend(coinmech_conn *conn, int64_t amount_minor, const char *item,
                                const char *request_id, coinmech_result *result);
/* currency: NULL or a 3-letter ISO 4217 code, for a cabinet that takes several. */
COINMECH_API int coinmech_spend_currency(coinmech_conn *conn, int64_t amount_minor,
                                         const char *currency, const char *item,
                                         const char *request_id, coinmech_result *result);
COINMECH_API int coinmech_refund(coinmech_conn *conn, const char *request_id,
                                 coinmech_result *result);
COINMECH_API int coinmech_cancel(coinmech_conn *conn, const char *request_id,
                                 coinmech_result *result);

#ifdef __cplusplus
}
#endif
#endif
